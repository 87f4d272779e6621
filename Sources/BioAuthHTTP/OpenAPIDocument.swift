import Foundation

/// The OpenAPI document of the HTTP API (`Sources/BioAuthHTTP/openapi.yaml`), served at `/openapi.yaml`.
public enum OpenAPIDocument {
    public static let yaml: String = {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "yaml"),
            let text = try? String(contentsOf: url, encoding: .utf8)
        else { return "openapi: 3.1.0\ninfo: {title: BioAuth, version: '1'}\npaths: {}\n" }
        return text
    }()
}
