import BioAuthServer
import Logging

/// Opens the database, runs `body` with a service over it — sealing signing keys as `signing`
/// says, when the command touches them — and closes the database. For the operator's commands
/// (`api-key`, `keys`, `webhooks`), which work on the database directly while servers run.
func withOperatorService<T: Sendable>(
    _ database: DatabaseOptions, _ signing: SigningKeyOptions? = nil, _ body: (BioAuthService) async throws -> T
) async throws -> T {
    var logger = Logger(label: "bioauth-server")
    logger.logLevel = .warning
    var configuration = ServerConfiguration()
    if let signing { configuration.tokens.signingKeys = try signing.protection(for: database) }
    let store = try await database.open(logLevel: .warning, logger: logger)
    do {
        let result = try await body(BioAuthService(store: store, configuration: configuration, logger: logger))
        try await store.close()
        return result
    } catch {
        try? await store.close()
        throw error
    }
}
