import Foundation

/// The OpenAPI document of the HTTP API (`Sources/BioAuthHTTP/openapi.yaml`), served at `/openapi.yaml`.
public enum OpenAPIDocument {
    public static let yaml: String = {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "yaml"),
            let text = try? String(contentsOf: url, encoding: .utf8)
        else { return "openapi: 3.1.0\ninfo: {title: BioAuth, version: '1'}\npaths: {}\n" }
        return text
    }()

    /// Every documented operation: method (lower case) and path template (`/v1/devices/{id}`).
    public static let operations: [(method: String, path: String)] = {
        var operations: [(String, String)] = []
        var path: String?
        for line in yaml.split(separator: "\n") {
            if line.hasPrefix("  /"), line.hasSuffix(":") { path = String(line.dropFirst(2).dropLast()) }
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if let path, line.hasPrefix("    "), !line.hasPrefix("     "),
                let method = ["get", "post", "put", "patch", "delete"].first(where: { trimmed.hasPrefix($0 + ":") })
            {
                operations.append((method, path))
            }
        }
        return operations
    }()
}
