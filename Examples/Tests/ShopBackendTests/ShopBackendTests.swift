import BioAuthCore
import BioAuthHTTP
import BioAuthServer
import BioAuthSQLite
import BioAuthWebhooks
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import ShopBackend
import Testing

/// The whole story of a backend that owns its login, over real HTTP on loopback.
struct ShopBackendTests {
    static let secret = "the shop's webhook secret, 32+ bytes"

    @Test func aShopCustomerEnrolsWithAGrantLogsInWithTheirPhoneAndOrders() async throws {
        let store = try SQLiteStore.inMemory()
        let shop = ShopBackend(store: store, webhookSecret: Self.secret)
        // BioAuth's routes are in the shop's router; its background work (sweeps, webhook delivery)
        // is one service that the shop runs beside its own.
        let app = Application(
            router: shop.router(), configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            services: [shop.bioauth.backgroundService()])
        try await app.test(.live) { client in
            func post(_ path: String, _ body: [String: String], token: String? = nil) async throws -> (
                status: HTTPResponse.Status, json: [String: Any]
            ) {
                var headers: HTTPFields = [.contentType: "application/json"]
                if let token { headers[.authorization] = "Bearer " + token }
                let response = try await client.execute(
                    uri: path, method: .post, headers: headers, body: ByteBuffer(bytes: try JSONEncoder().encode(body)))
                let json = (try? JSONSerialization.jsonObject(with: Data(buffer: response.body))) as? [String: Any] ?? [:]
                return (response.status, json)
            }
            // The shop's own login, then a grant for its customer.
            #expect(try await post("/shop/login", ["email": "ada@shop.example", "password": "wrong"]).status == .unauthorized)
            let shopSession = try #require(
                try await post("/shop/login", ["email": "ada@shop.example", "password": "correct horse battery staple"]).json["shopSession"]
                    as? String)
            let grant = try await post("/shop/enrolment-grant", [:], token: shopSession)
            let grantToken = try #require(grant.json["grant"] as? String)
            #expect(grant.json["userId"] as? String == "customer-1815")

            // The phone enrols its key through BioAuth's routes, mounted under /auth.
            let key = P256.Signing.PrivateKey()
            func sign(_ challenge: [String: Any]) throws -> [String: String] {
                let envelope = try JSONDecoder().decode(ChallengeEnvelope.self, from: try JSONSerialization.data(withJSONObject: challenge))
                return [
                    "challengeId": envelope.challengeId,
                    "signature": Base64URL.encode(try key.signature(for: try envelope.message().encoded).derRepresentation),
                ]
            }
            let registration = try await post(
                "/auth/v1/devices/registration/challenge",
                ["name": "Ada's phone", "publicKey": Base64URL.encode(key.publicKey.derRepresentation)], token: grantToken)
            #expect(registration.status == .ok)
            let device = try await post("/auth/v1/devices/registration/finish", try sign(registration.json), token: grantToken)
            let deviceID = try #require(device.json["id"] as? String)

            // A biometric login gives an access token; the shop's own route accepts it.
            let challenge = try await post("/auth/v1/login/challenge", ["userId": "customer-1815", "deviceId": deviceID])
            let login = try await post("/auth/v1/login/finish", try sign(challenge.json))
            let accessToken = try #require(login.json["accessToken"] as? String)
            let orders = try await client.execute(uri: "/shop/orders", method: .get, headers: [.authorization: "Bearer " + accessToken])
            #expect(orders.status == .ok && String(buffer: orders.body).contains("customer-1815"))
            #expect(orders.headers[HTTPField.Name("X-Shop")!] == "1", "the shop's middleware")
            #expect(
                try await client.execute(uri: "/shop/orders", method: .get, headers: [.authorization: "Bearer " + shopSession]).status
                    == .unauthorized)
            #expect(try await client.execute(uri: "/shop/orders", method: .get).status == .unauthorized)
            let jwks = try await client.execute(uri: "/auth/.well-known/jwks.json", method: .get)
            #expect(jwks.status == .ok && String(buffer: jwks.body).contains("ES256"))

            // BioAuth's events reach the shop's webhook route, signed.
            let port = try #require(client.port)
            let sink = try #require(WebhookSink(url: "http://127.0.0.1:\(port)/hooks/bioauth", secret: Self.secret))
            // Device logins are delivered only to a backend that asks for them.
            let delivery = OutboxDelivery(
                store: store, sink: sink, policy: DeliveryPolicy(optionalEvents: [.loginSucceeded]),
                logger: Logger(label: "shop"))
            try await delivery.deliverDue()
            #expect(shop.events.withLock { $0.map(\.type) } == ["device.enrolled", "login.succeeded"])
            #expect(shop.events.withLock { $0.allSatisfy { $0.userId == "customer-1815" && $0.deviceId == deviceID } })
            let forged = try await client.execute(
                uri: "/hooks/bioauth", method: .post,
                headers: [
                    .contentType: "application/json",
                    HTTPField.Name(WebhookSignature.header)!: "t=1,v1=" + String(repeating: "0", count: 64),
                ],
                body: ByteBuffer(string: #"{"id":"999","type":"device.revoked","occurredAt":1}"#))
            #expect(forged.status == .unauthorized)
        }
    }
}
