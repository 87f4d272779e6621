"""BioAuth's sign-in page in a real browser: Chromium (headless shell), driven by Playwright, with a
DevTools virtual authenticator as the passkey. Run by BrowserTests (Swift) against two live
bioauth-server processes; prints one line per check and exits non-zero if any failed.

usage: passkeys.py <chromium> <server> <device-bound-only server> <screenshot folder>

For the passkey after a phone, the test's phone (the Swift side) approves: this script writes the
request's id and binding code to <screenshot folder>/pending.json and waits for `approved` there.
For "Approve on my phone" it writes the number the page shows to <screenshot folder>/number.json;
the phone types a wrong number for the first request and the right one for the second.
"""
import asyncio
import json
import os
import sys
import time

from playwright.async_api import async_playwright

CHROMIUM, SERVER, BOUND_SERVER, SHOTS = sys.argv[1:5]
PASSWORD = "correct horse battery staple"
failures = []


# The account's devices, fetched by the page with its own DPoP key (the page's `dpop`), as the
# page would call any account route.
DEVICES_WITH_THE_PAGES_KEY = """async () => {
  const session = JSON.parse(sessionStorage.getItem("bioauth.session"));
  const url = location.origin + "/v1/devices";
  const reply = await fetch(url, { headers: { Authorization: "DPoP " + session.token, DPoP: await dpop.proof(await dpop.of(session.sessionId), "GET", url, session.token) } });
  return reply.json();
}"""


def check(name, condition, detail=""):
    print(("ok   " if condition else "FAIL ") + name + (f": {detail}" if detail and not condition else ""), flush=True)
    if not condition:
        failures.append(name)


async def authenticator(page, synced=False):
    """A platform authenticator (internal transport, resident keys, user verification)."""
    cdp = await page.context.new_cdp_session(page)
    await cdp.send("WebAuthn.enable")
    options = {"protocol": "ctap2", "transport": "internal", "hasResidentKey": True, "hasUserVerification": True,
               "isUserVerified": True, "automaticPresenceSimulation": True}
    if synced:
        options.update({"defaultBackupEligibility": True, "defaultBackupState": True})
    added = await cdp.send("WebAuthn.addVirtualAuthenticator", {"options": options})
    return cdp, added["authenticatorId"]


async def act(page, selector):
    """Clicks `selector` and waits for the page's next outcome (the page's CSP forbids evaluating
    strings, so this reads its status element's outcome number instead); returns the message."""
    before = int(await page.get_attribute("#status", "data-outcome") or 0)
    await page.click(selector)
    await page.wait_for_selector(f'#status[data-outcome="{before + 1}"]')
    return await page.text_content("#status")


async def shot(page, name):
    await page.screenshot(path=os.path.join(SHOTS, name + ".png"), full_page=True)


async def sign_up(page, base, user):
    reply = await page.request.post(base + "/v1/users", data=json.dumps({"username": user, "password": PASSWORD}),
                                    headers={"Content-Type": "application/json"})
    check(f"sign-up {user}", reply.status == 201, reply.status)


async def password_sign_in(page, user):
    await page.fill("#username", user)
    await page.click("#password-section summary")
    await page.fill("#password", PASSWORD)
    return await act(page, "#password-signin")


async def sign_out(page):
    said = await act(page, "#signout")
    check("signing out shows the sign-in form", said == "Signed out." and await page.is_visible("#signed-out"), said)


async def main():
    os.makedirs(SHOTS, exist_ok=True)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])

        # A passkey registered after a password sign-in, then signing in on its own.
        page = await browser.new_page()
        console_errors = []
        page.on("console", lambda message: message.type == "error" and console_errors.append(message.text))
        page.on("pageerror", lambda error: console_errors.append(str(error)))
        cdp, authenticator_id = await authenticator(page)
        await sign_up(page, SERVER, "alice")
        await page.goto(SERVER + "/signin/")
        check("the page loads with its script and style",
              await page.title() == "Sign in" and await page.is_visible("#passkey-signin")
              and await page.evaluate("getComputedStyle(document.querySelector('main')).maxWidth") == "384px")
        await shot(page, "1-sign-in")
        said = await password_sign_in(page, "alice")
        check("password sign-in shows the account", "Signed in with your password" in said, said)
        await shot(page, "2-account")
        said = await act(page, "#passkey-create")
        check("a passkey is created in the browser and enrolled", said == "Passkey created. It is in your device list.", said)
        await shot(page, "3-passkey-created")
        credentials = (await cdp.send("WebAuthn.getCredentials", {"authenticatorId": authenticator_id}))["credentials"]
        check("the authenticator holds one discoverable credential", len(credentials) == 1 and credentials[0]["isResidentCredential"])

        await sign_out(page)
        await page.fill("#username", "alice")
        said = await act(page, "#passkey-signin")
        check("the passkey signs in", said == "Signed in with your passkey.", said)
        await shot(page, "4-signed-in-with-passkey")
        session = json.loads(await page.evaluate("sessionStorage.getItem('bioauth.session')"))
        check("the passkey's session is bound to the browser's key (DPoP)", session.get("tokenType") == "DPoP", session)
        stolen = await page.request.get(SERVER + "/v1/devices", headers={"Authorization": "Bearer " + session["token"]})
        check("a copy of the token is refused without the browser's key", stolen.status == 401, stolen.status)
        devices = await page.evaluate(DEVICES_WITH_THE_PAGES_KEY)
        check("the session is the passkey's device session",
              len(devices) == 1 and devices[0]["id"] == session.get("deviceId") and devices[0]["passkey"]["synced"] is False
              and devices[0]["passkey"]["format"] == "packed", devices)
        check("the session carries access and refresh tokens", "accessToken" in session and "refreshToken" in session)

        # User verification refused: the ceremony fails, nothing signs in.
        await sign_out(page)
        await cdp.send("WebAuthn.setUserVerified", {"authenticatorId": authenticator_id, "isUserVerified": False})
        await page.fill("#username", "alice")
        said = await act(page, "#passkey-signin")
        check("without user verification no sign-in happens", said.startswith("Passkey sign-in failed") and
              await page.is_visible("#signed-out"), said)
        await shot(page, "5-user-verification-refused")
        check("no script error and no Content Security Policy violation on the page", console_errors == [], console_errors)
        await page.close()

        # A passkey for a user who has a phone: it waits for the phone's approval with the code.
        page = await browser.new_page()
        await authenticator(page)
        await page.goto(SERVER + "/signin/")
        await password_sign_in(page, "carol")  # carol and her phone were made by the test
        said = await act(page, "#passkey-create")
        check("a passkey after the phone waits for its approval, with the binding code",
              said.startswith("Approve this passkey on your phone with the code ") and await page.is_visible("#passkey-complete"), said)
        await shot(page, "7-passkey-waits-for-the-phone")
        code = said.split("the code ")[1].split(",")[0]
        said = await act(page, "#passkey-complete")
        check("finishing before the approval is refused", said == "Your phone has not approved it yet.", said)
        request_id = await page.evaluate("sessionStorage.getItem('bioauth.request')")
        with open(os.path.join(SHOTS, "pending.json"), "w") as pending:
            json.dump({"id": request_id, "bindingCode": code}, pending)
        deadline = time.monotonic() + 60
        while not os.path.exists(os.path.join(SHOTS, "approved")) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        said = await act(page, "#passkey-complete")
        check("after the phone's approval the passkey is enrolled", said == "Passkey created. It is in your device list.", said)
        await shot(page, "8-passkey-approved-by-the-phone")
        session = json.loads(await page.evaluate("sessionStorage.getItem('bioauth.session')"))
        devices = await (await page.request.get(SERVER + "/v1/devices",
                                                headers={"Authorization": "Bearer " + session["token"]})).json()
        check("the passkey is a device enrolled by approval",
              [device.get("enrolledBy") for device in devices if "passkey" in device] == ["approval"], devices)
        await page.close()

        # "Approve on my phone": the page shows a number, the test's phone types it (wrongly first).
        page = await browser.new_page()
        page.on("console", lambda message: message.type == "error" and console_errors.append(message.text))
        page.on("pageerror", lambda error: console_errors.append(str(error)))
        cdp, authenticator_id = await authenticator(page)
        await page.goto(SERVER + "/signin/")
        await page.fill("#username", "dave")  # dave and his phone were made by the test
        for attempt, expected in [("wrong", "The number typed on the phone was not this one. Start again."),
                                  ("right", "Your phone approved. Create a passkey to sign in here without it next time.")]:
            said = await act(page, "#phone-signin")
            number = await page.text_content("#number")
            check(f"the page shows the number to type on the phone ({attempt})",
                  await page.is_visible("#waiting") and len(number) == 4 and number.isdigit() and number in said, said)
            if attempt == "right":
                await shot(page, "9-approve-on-my-phone")
            before = int(await page.get_attribute("#status", "data-outcome") or 0)
            with open(os.path.join(SHOTS, "number.json"), "w") as shown:
                json.dump({"number": number, "attempt": attempt}, shown)
            await page.wait_for_selector(f'#status[data-outcome="{before + 1}"]', timeout=60000)
            said = await page.text_content("#status")
            check(f"the page hears the phone's answer ({attempt} number)", said == expected, said)
        await shot(page, "10-approved-by-the-phone")
        session = json.loads(await page.evaluate("sessionStorage.getItem('bioauth.session')"))
        check("the phone's approval opens a session for the user", session["userId"] == "dave" and "accessToken" not in session, session)
        check("the approved session is bound to the browser's key (DPoP)", session.get("tokenType") == "DPoP", session)
        said = await act(page, "#passkey-create")
        check("the approved browser creates one passkey without another approval", said == "Passkey created. Sign in with it now.", said)
        await shot(page, "11-passkey-after-the-phones-approval")
        await page.fill("#username", "dave")
        said = await act(page, "#passkey-signin")
        check("that passkey signs in", said == "Signed in with your passkey.", said)
        check("no script error and no Content Security Policy violation while approving on the phone", console_errors == [], console_errors)
        await page.close()

        # A synced passkey (BE = BS = 1) where the deployment requires device-bound ones.
        page = await browser.new_page()
        await authenticator(page, synced=True)
        await sign_up(page, BOUND_SERVER, "bob")
        await page.goto(BOUND_SERVER + "/signin/")
        await password_sign_in(page, "bob")
        said = await act(page, "#passkey-create")
        check("a synced passkey is refused where device-bound ones are required",
              said == "The passkey was not created: authentication_failed", said)
        await shot(page, "6-synced-passkey-refused")
        session = json.loads(await page.evaluate("sessionStorage.getItem('bioauth.session')"))
        devices = await (await page.request.get(BOUND_SERVER + "/v1/devices",
                                                headers={"Authorization": "Bearer " + session["token"]})).json()
        check("nothing was enrolled", devices == [], devices)
        await browser.close()
    print(f"screenshots: {SHOTS}")
    sys.exit(1 if failures else 0)


asyncio.run(main())
