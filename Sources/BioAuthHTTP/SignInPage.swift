import HTTPTypes
import Hummingbird
import NIOCore

/// A small sign-in page a deployment may serve (`bioauth-server --sign-in-page`): a username, "Sign
/// in with a passkey", "Approve on my phone" with the number to type there when cross-device
/// sign-in is on, the demo accounts' password when password login is on, and, once signed in,
/// "Create a passkey on this device". Plain HTML, one script using `navigator.credentials`, one
/// style sheet a deployment can replace; no framework, nothing inline (the page's Content Security
/// Policy allows scripts and styles from the page's origin only, and no framing).
///
/// An embedding backend mounts the same `/v1` endpoints and writes its own page: this one only
/// calls them, with the session token kept in `sessionStorage` for the tab's life.
enum SignInPage {
    /// Served at `/signin/`; its script and style sheet beside it.
    static let path = "signin"

    static func add<Context: BioAuthRequestContext>(to router: some RouterMethods<Context>, passwordLogin: Bool, crossDevice: Bool) {
        let html = page(passwordLogin: passwordLogin, crossDevice: crossDevice)
        // `/signin` and `/signin/` alike (the router does not tell them apart).
        router.get("\(path)") { _, _ in response(html, type: "text/html; charset=utf-8") }
        router.get("\(path)/signin.js") { _, _ in response(script, type: "text/javascript; charset=utf-8") }
        router.get("\(path)/signin.css") { _, _ in response(style, type: "text/css; charset=utf-8") }
    }

    static func response(_ body: String, type: String) -> Response {
        Response(
            status: .ok,
            headers: [
                .contentType: type, .cacheControl: "no-store", HTTPField.Name("Referrer-Policy")!: "no-referrer",
                HTTPField.Name("X-Content-Type-Options")!: "nosniff", HTTPField.Name("X-Frame-Options")!: "DENY",
                .contentSecurityPolicy:
                    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
            ], body: .init(byteBuffer: ByteBuffer(string: body)))
    }

    static func page(passwordLogin: Bool, crossDevice: Bool) -> String {
        let phone =
            crossDevice
            ? """
                  <button id="phone-signin" type="button">Approve on my phone</button>
            """ : ""
        let password =
            passwordLogin
            ? """
                  <details id="password-section">
                    <summary>Sign in with a password</summary>
                    <label for="password">Password</label>
                    <input id="password" type="password" autocomplete="current-password">
                    <button id="password-signin" type="button">Sign in with the password</button>
                  </details>
            """ : ""
        return """
            <!doctype html>
            <html lang="en">
            <head>
              <meta charset="utf-8">
              <meta name="viewport" content="width=device-width, initial-scale=1">
              <title>Sign in</title>
              <link rel="stylesheet" href="/\(path)/signin.css">
              <script src="/\(path)/signin.js" defer></script>
            </head>
            <body>
              <main>
                <h1 id="title">Sign in</h1>
                <section id="signed-out" aria-labelledby="title">
                  <label for="username">Username</label>
                  <input id="username" autocomplete="username webauthn" autocapitalize="none" spellcheck="false" required>
                  <button id="passkey-signin" type="button">Sign in with a passkey</button>
            \(phone)
            \(password)
                </section>
                <section id="waiting" hidden aria-labelledby="waiting-title">
                  <h2 id="waiting-title">Approve on your phone</h2>
                  <p>Open the app on your phone and type this number:</p>
                  <p id="number" class="number"></p>
                  <p class="hint">Never read it to anyone: nobody from the service asks for it.</p>
                  <button id="phone-cancel" type="button">Cancel</button>
                </section>
                <section id="signed-in" hidden aria-labelledby="account-title">
                  <h2 id="account-title">Signed in as <span id="account"></span></h2>
                  <label for="passkey-name">Name of the new passkey</label>
                  <input id="passkey-name" value="This browser" maxlength="64">
                  <button id="passkey-create" type="button">Create a passkey on this device</button>
                  <button id="passkey-complete" type="button" hidden>My phone approved it: finish</button>
                  <button id="signout" type="button">Sign out</button>
                </section>
                <p id="status" role="status" aria-live="polite"></p>
              </main>
            </body>
            </html>

            """
    }

    static let style = """
        body { font-family: system-ui, sans-serif; margin: 0; background: #f5f5f7; color: #1d1d1f; }
        main { max-width: 24rem; margin: 4rem auto; padding: 2rem; background: #fff; border-radius: 12px; }
        label { display: block; margin: 1rem 0 0.25rem; }
        input { width: 100%; box-sizing: border-box; padding: 0.6rem; font-size: 1rem; }
        button { display: block; width: 100%; margin-top: 1rem; padding: 0.7rem; font-size: 1rem; cursor: pointer; }
        button:focus-visible, input:focus-visible { outline: 3px solid #0a66ff; outline-offset: 2px; }
        details { margin-top: 1.5rem; }
        #status { min-height: 1.5rem; }
        .number { font-size: 3rem; font-weight: 600; letter-spacing: 0.3em; text-align: center; margin: 1rem 0; }
        .hint { color: #6e6e73; font-size: 0.9rem; }
        #status.error { color: #b00020; }

        """

    static let script = """
        "use strict";
        // BioAuth's sign-in page: WebAuthn ceremonies against /v1/passkeys (docs/Protocol.md §4, flow 7).
        const $ = (id) => document.getElementById(id);
        const b64u = {
          encode(buffer) {
            let text = "";
            for (const byte of new Uint8Array(buffer)) text += String.fromCharCode(byte);
            return btoa(text).replace(/\\+/g, "-").replace(/\\//g, "_").replace(/=+$/, "");
          },
          decode(text) {
            const base64 = text.replace(/-/g, "+").replace(/_/g, "/");
            return Uint8Array.from(atob(base64 + "===".slice((base64.length + 3) % 4)), (c) => c.charCodeAt(0));
          },
        };

        // Each outcome numbers itself (data-outcome), so a script driving the page knows when one arrived.
        function say(message, isError = false, busy = false) {
          const status = $("status");
          status.textContent = message;
          status.className = isError ? "error" : "";
          status.setAttribute("aria-busy", busy ? "true" : "false");
          if (!busy) status.dataset.outcome = String(Number(status.dataset.outcome || 0) + 1);
        }

        // DPoP (RFC 9449, docs/Protocol.md flow 9): each session this page opens with a passkey or
        // the phone is bound to a P-256 key of its own, made for it, that the browser keeps and
        // cannot export (WebCrypto; in IndexedDB, so the tab can come back to it): a copied token
        // is useless elsewhere. Signing out forgets the key.
        const dpop = {
          pairs: new Map(),
          nonce: null,
          async store(mode, use) {
            const db = await new Promise((resolve, reject) => {
              const open = indexedDB.open("bioauth", 1);
              open.onupgradeneeded = () => open.result.createObjectStore("keys");
              open.onsuccess = () => resolve(open.result);
              open.onerror = () => reject(open.error);
            });
            return new Promise((resolve, reject) => {
              const request = use(db.transaction("keys", mode).objectStore("keys"));
              request.onsuccess = () => resolve(request.result);
              request.onerror = () => reject(request.error);
            });
          },
          fresh() { return crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign"]); },
          async keep(sessionId, pair) {
            this.pairs.set(sessionId, pair);
            await this.store("readwrite", (keys) => keys.put(pair, sessionId)).catch(() => {});
          },
          async of(sessionId) {
            if (!this.pairs.has(sessionId)) {
              const kept = await this.store("readonly", (keys) => keys.get(sessionId)).catch(() => null);
              if (kept) this.pairs.set(sessionId, kept);
            }
            return this.pairs.get(sessionId);
          },
          async forget(sessionId) {
            this.pairs.delete(sessionId);
            await this.store("readwrite", (keys) => keys.delete(sessionId)).catch(() => {});
          },
          async proof(pair, method, url, token) {
            const { kty, crv, x, y } = await crypto.subtle.exportKey("jwk", pair.publicKey);
            const claims = { jti: b64u.encode(crypto.getRandomValues(new Uint8Array(16))), htm: method, htu: url,
              iat: Math.floor(Date.now() / 1000) };
            if (token) claims.ath = b64u.encode(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token)));
            if (this.nonce) claims.nonce = this.nonce;
            const part = (value) => b64u.encode(new TextEncoder().encode(JSON.stringify(value)));
            const input = part({ typ: "dpop+jwt", alg: "ES256", jwk: { kty, crv, x, y } }) + "." + part(claims);
            const signature = await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, pair.privateKey, new TextEncoder().encode(input));
            return input + "." + b64u.encode(signature);
          },
        };

        // A call to the API. `session`: the signed-in session (its token goes as DPoP with its
        // key's proof when it is bound, else as a bearer token); `opening`: the call may open a
        // session, which a new key's proof binds.
        async function call(path, body, session, opening = false) {
          const url = new URL("/v1/" + path, location.origin).href;
          const fresh = opening && window.crypto && crypto.subtle ? await dpop.fresh() : null;
          for (let attempt = 0; ; attempt++) {
            const headers = { "Content-Type": "application/json" };
            if (session && session.tokenType === "DPoP") {
              headers.Authorization = "DPoP " + session.token;
              const pair = await dpop.of(session.sessionId);
              if (pair) headers.DPoP = await dpop.proof(pair, "POST", url, session.token);
            } else if (session) {
              headers.Authorization = "Bearer " + session.token;
            } else if (fresh) {
              headers.DPoP = await dpop.proof(fresh, "POST", url);
            }
            const response = await fetch(url, { method: "POST", headers, body: JSON.stringify(body) });
            const nonce = response.headers.get("DPoP-Nonce");
            if (nonce) dpop.nonce = nonce;
            const json = await response.json().catch(() => ({}));
            // The server's nonce (use_dpop_nonce): once more, with it.
            if (!response.ok && nonce && attempt === 0 && headers.DPoP) continue;
            if (!response.ok) throw Object.assign(new Error(json.error || "status " + response.status), { status: response.status });
            const opened = json.tokenType === "DPoP" ? json : json.session?.tokenType === "DPoP" ? json.session : null;
            if (fresh && opened) await dpop.keep(opened.sessionId, fresh);
            return json;
          }
        }

        // WebAuthn Level 3's JSON forms where the browser has them, the same by hand where not.
        function creationOptions(json) {
          if (PublicKeyCredential.parseCreationOptionsFromJSON) return PublicKeyCredential.parseCreationOptionsFromJSON(json);
          return { ...json, challenge: b64u.decode(json.challenge), user: { ...json.user, id: b64u.decode(json.user.id) },
            excludeCredentials: json.excludeCredentials.map((d) => ({ ...d, id: b64u.decode(d.id) })) };
        }
        function requestOptions(json) {
          if (PublicKeyCredential.parseRequestOptionsFromJSON) return PublicKeyCredential.parseRequestOptionsFromJSON(json);
          return { ...json, challenge: b64u.decode(json.challenge), allowCredentials: [] };
        }
        function credentialJSON(credential) {
          if (credential.toJSON) return credential.toJSON();
          const r = credential.response, json = { id: credential.id, rawId: b64u.encode(credential.rawId), type: credential.type, response: {
            clientDataJSON: b64u.encode(r.clientDataJSON) } };
          if (r.attestationObject) json.response.attestationObject = b64u.encode(r.attestationObject);
          if (r.authenticatorData) json.response.authenticatorData = b64u.encode(r.authenticatorData);
          if (r.signature) json.response.signature = b64u.encode(r.signature);
          if (r.userHandle) json.response.userHandle = b64u.encode(r.userHandle);
          return json;
        }

        function show(session) {
          if (session) sessionStorage.setItem("bioauth.session", JSON.stringify(session));
          const current = JSON.parse(sessionStorage.getItem("bioauth.session") || "null");
          $("waiting").hidden = true;
          $("signed-out").hidden = !!current;
          $("signed-in").hidden = !current;
          $("title").textContent = current ? "Your account" : "Sign in";
          if (current) $("account").textContent = current.userId;
          return current;
        }

        async function passkeySignIn() {
          const username = $("username").value.trim();
          if (!username) return say("Enter your username.", true);
          try {
            say("Waiting for your passkey…", false, true);
            const options = await call("passkeys/login/challenge", { username });
            const credential = await navigator.credentials.get({ publicKey: requestOptions(options.publicKey) });
            const session = await call("passkeys/login/finish", { challengeId: options.challengeId, credential: credentialJSON(credential) },
              null, true);
            sessionStorage.removeItem("bioauth.crossDevice");
            show(session);
            say("Signed in with your passkey.");
          } catch (error) {
            say(error.status === 401 ? "That passkey did not sign you in." : "Passkey sign-in failed: " + error.message, true);
          }
        }

        // "Approve on my phone" (docs/Protocol.md §4, flow 8): show the number, poll until the phone decides.
        let waiting = null;
        const endings = { denied: "Your phone refused this sign-in.", wrongNumber: "The number typed on the phone was not this one. Start again.",
          expired: "The phone did not answer in time. Start again.", collected: "This sign-in was already used." };
        async function phoneSignIn() {
          const username = $("username").value.trim();
          if (!username) return say("Enter your username.", true);
          try {
            // A screen the phone let in before says so with its token: its request comes first on the phone.
            const screenToken = localStorage.getItem("bioauth.screen." + username);
            const started = await call("cross-device/requests", screenToken ? { username, screenToken } : { username });
            waiting = started;
            $("number").textContent = started.number;
            $("signed-out").hidden = true;
            $("waiting").hidden = false;
            say("Waiting for your phone. Type " + started.number + " there.");
            setTimeout(() => poll(started), started.interval * 1000);
          } catch (error) {
            say("Could not ask your phone: " + error.message, true);
          }
        }
        async function poll(started) {
          if (waiting !== started) return;
          try {
            const result = await call("cross-device/requests/" + encodeURIComponent(started.id) + "/poll", { pollToken: started.pollToken },
              null, true);
            if (waiting !== started) return;
            if (result.status === "pending") return setTimeout(() => poll(started), started.interval * 1000);
            waiting = null;
            if (result.status === "approved") {
              if (result.screenToken) localStorage.setItem("bioauth.screen." + result.session.userId, result.screenToken);
              // A session your phone approved: it may create one passkey on this browser.
              sessionStorage.setItem("bioauth.crossDevice", "1");
              show(result.session);
              return say("Your phone approved. Create a passkey to sign in here without it next time.");
            }
            show();
            say(endings[result.endedBy] || "This sign-in ended.", true);
          } catch (error) {
            waiting = null;
            show();
            say("The sign-in ended: " + error.message, true);
          }
        }
        function cancelPhone() {
          waiting = null;
          show();
          say("Cancelled.");
        }

        async function passwordSignIn() {
          try {
            const session = await call("login/password", { username: $("username").value.trim(), password: $("password").value });
            $("password").value = "";
            sessionStorage.removeItem("bioauth.crossDevice");
            show(session);
            say("Signed in with your password. Create a passkey to sign in without it.");
          } catch (error) {
            say("Password sign-in failed: " + error.message, true);
          }
        }

        async function createPasskey() {
          const session = show();
          try {
            say("Creating a passkey…", false, true);
            const options = await call("passkeys/registration/challenge", { name: $("passkey-name").value }, session);
            const credential = await navigator.credentials.create({ publicKey: creationOptions(options.publicKey) });
            const reply = await call("passkeys/registration/finish",
              { challengeId: options.challengeId, credential: credentialJSON(credential) }, session);
            if (reply.bindingCode) {
              // Not the first device: the phone approves it with this code (or a recovery code does).
              sessionStorage.setItem("bioauth.request", reply.id);
              $("passkey-complete").hidden = false;
              return say("Approve this passkey on your phone with the code " + reply.bindingCode + ", then finish here.");
            }
            if (sessionStorage.getItem("bioauth.crossDevice")) {
              // The phone's approval covered this one passkey; the session it opened has ended.
              sessionStorage.removeItem("bioauth.session");
              sessionStorage.removeItem("bioauth.crossDevice");
              show();
              return say("Passkey created. Sign in with it now.");
            }
            say("Passkey created. It is in your device list.");
          } catch (error) {
            say("The passkey was not created: " + error.message, true);
          }
        }

        async function completePasskey() {
          const session = show();
          try {
            await call("passkeys/registration/complete", { enrolmentRequestId: sessionStorage.getItem("bioauth.request") }, session);
            sessionStorage.removeItem("bioauth.request");
            $("passkey-complete").hidden = true;
            say("Passkey created. It is in your device list.");
          } catch (error) {
            say(error.message === "approval_required" ? "Your phone has not approved it yet." : "The passkey was not created: " + error.message,
              true);
          }
        }

        async function signOut() {
          const session = show();
          sessionStorage.removeItem("bioauth.session");
          sessionStorage.removeItem("bioauth.crossDevice");
          show();
          say("Signed out.");
          if (session) {
            await call("logout", {}, session).catch(() => {});
            await dpop.forget(session.sessionId);
          }
        }

        document.addEventListener("DOMContentLoaded", () => {
          $("passkey-signin").addEventListener("click", passkeySignIn);
          $("phone-signin")?.addEventListener("click", phoneSignIn);
          $("phone-cancel").addEventListener("click", cancelPhone);
          $("password-signin")?.addEventListener("click", passwordSignIn);
          $("passkey-create").addEventListener("click", createPasskey);
          $("passkey-complete").addEventListener("click", completePasskey);
          $("signout").addEventListener("click", signOut);
          show();
        });

        """
}
