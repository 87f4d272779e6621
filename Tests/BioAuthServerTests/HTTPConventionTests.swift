import BioAuthCore
import BioAuthHTTP
import Foundation
import BioAuthSQLite
import HTTPTypes
import InMemoryLogging
import Logging
import Testing

/// HTTP conventions a client written from the documents relies on, and the cross-site defence.
struct HTTPConventionTests {
    /// Issue 19 item 5: a library logs through the logger its caller gives it; without one it logs
    /// nothing, rather than through a global logger of its own making.
    @Test func theServerLogsOnlyThroughTheLoggerItIsGiven() async throws {
        let silent = BioAuthServerApp.build(ServerAppConfiguration(), store: try SQLiteStore.inMemory())
        #expect(silent.logger.handler is SwiftLogNoOpLogHandler)
        try await silent.shutdown()
        let handler = InMemoryLogHandler()
        let given = BioAuthServerApp.build(
            ServerAppConfiguration(logLevel: .debug), store: try SQLiteStore.inMemory(), logger: Logger(label: "app") { _ in handler })
        #expect(given.logger.label == "app" && given.logger.handler is InMemoryLogHandler && given.logger.logLevel == .debug)
        try await given.shutdown()
    }

    let harness = ServerHarness()
    let challengeBody = #"{"userId":"alice","deviceId":"3f2c1a9e-7b41-4c1e-9a53-0f6d2b8e4c10"}"#

    @Test func aKnownPathWithAnotherMethodAnswers405WithAllow() async throws {
        try await harness.test { api in
            let finish = try await api.call(.get, "/v1/login/finish")
            #expect(finish.status == 405 && finish.headers[.allow] == "POST" && finish["error"] == "method_not_allowed")
            let device = try await api.call(.put, "/v1/devices/3f2c1a9e-7b41-4c1e-9a53-0f6d2b8e4c10", raw: "{}")
            #expect(device.status == 405 && device.headers[.allow] == "PATCH, DELETE")
            #expect(try await api.call(.get, "/v1/nowhere").status == 404)
            #expect(try await api.call(.get, "/v1/devices/a/b").status == 404)
        }
    }

    /// A page on another site can POST `text/plain` or a form without a CORS preflight; such bodies
    /// are refused before anything is counted, issued or locked.
    @Test func crossSiteSimpleRequestsAreRefusedWith415() async throws {
        try await harness.test { api in
            for type in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx"] {
                let reply = try await api.call(.post, "/v1/login/challenge", raw: challengeBody, headers: [.contentType: type])
                #expect(reply.status == 415 && reply["field"] == "Content-Type", "\(type)")
                #expect(reply.headers[.accessControlAllowOrigin] == nil)
            }
            for _ in 0..<10 {
                _ = try await api.call(
                    .post, "/v1/login/password", raw: #"{"username":"alice","password":"wrong password"}"#,
                    headers: [.contentType: "text/plain"])
            }
            #expect(try await api.primarySession("alice").count == 43, "refused bodies counted no password failure")
            let accepted = try await api.call(
                .post, "/v1/login/challenge", raw: challengeBody, headers: [.contentType: "Application/JSON; charset=utf-8"])
            #expect(accepted.status == 200)
            #expect(accepted.headers[.accessControlAllowOrigin] == nil, "no CORS headers")
        }
    }

    @Test func aBodyOverTheLimitAnswers413() async throws {
        try await harness.test { api in
            let reply = try await api.post("/v1/login/challenge", raw: "{\"userId\":\"" + String(repeating: "a", count: 17 * 1024) + "\"}")
            #expect(reply.status == 413 && reply["field"] == "body")
        }
    }

    @Test func aKeyNamedTwiceIsRejectedNotFirstOrLastWins() async throws {
        try await harness.test { api in
            let plain = try await api.post(
                "/v1/login/challenge", raw: #"{"userId":"alice","userId":"bob","deviceId":"3f2c1a9e-7b41-4c1e-9a53-0f6d2b8e4c10"}"#)
            #expect(plain.status == 400 && plain["field"] == "userId" && plain["reason"] == "duplicateField")
            let escaped = try await api.post(
                "/v1/login/challenge", raw: #"{"userId":"alice","\u0075serId":"bob","deviceId":"3f2c1a9e-7b41-4c1e-9a53-0f6d2b8e4c10"}"#)
            #expect(escaped.status == 400 && escaped["reason"] == "duplicateField")
            // A value equal to a key is not a duplicate key.
            let valueLikeKey = try await api.post(
                "/v1/login/challenge", raw: #"{"userId":"deviceId","deviceId":"3f2c1a9e-7b41-4c1e-9a53-0f6d2b8e4c10"}"#)
            #expect(valueLikeKey.status == 200)
        }
    }

    @Test func theBearerSchemeIsCaseInsensitive() async throws {
        try await harness.test { api in
            let token = try await api.primarySession()
            for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
                let reply = try await api.call(.get, "/v1/sessions", headers: [.authorization: "\(scheme) \(token)"])
                #expect(reply.status == 200, "\(scheme)")
            }
            #expect(
                try await api.call(.get, "/v1/sessions", headers: [.authorization: "Bearer \(token.uppercased())"]).status == 401,
                "the token itself is case-sensitive")
            #expect(try await api.call(.get, "/v1/sessions", headers: [.authorization: "Basic \(token)"]).status == 401)
        }
    }
}
