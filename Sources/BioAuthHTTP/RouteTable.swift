import HTTPTypes
import Hummingbird
import Synchronization

/// Every route a router was given, method and path template, as it was given: what a `405
/// Method Not Allowed` answer's `Allow` header lists for a known path asked with another method.
/// The router's own knowledge, so a route and its 405 cannot disagree.
final class RouteTable: Sendable {
    private let routes = Mutex<[(method: HTTPRequest.Method, segments: [Substring])]>([])

    func record(_ method: HTTPRequest.Method, _ path: RouterPath) {
        let segments = path.description.split(separator: "/")
        routes.withLock { $0.append((method, segments)) }
    }

    /// The methods routed for a concrete request path, in the order the routes were added; empty
    /// for an unknown path. Routes mounted under a prefix of the host application's match the
    /// path's last segments.
    func methods(for requestPath: String) -> [String] {
        let requested = requestPath.split(separator: "/")
        var methods: [String] = []
        for route in routes.withLock({ $0 }) where Self.matches(route.segments, requested) {
            if !methods.contains(route.method.rawValue) { methods.append(route.method.rawValue) }
        }
        return methods
    }

    private static func matches(_ template: [Substring], _ requested: [Substring]) -> Bool {
        guard requested.count >= template.count else { return false }
        return zip(template, requested.suffix(template.count)).allSatisfy { pattern, segment in
            pattern.hasPrefix(":") || pattern.hasPrefix("{") || pattern == "*" || pattern == segment
        }
    }
}

/// Hands every route to `base` and records it in `table` first. Groups made from it record their
/// routes' full paths (a group hands its routes to its parent).
struct RecordingRouter<Base: RouterMethods>: RouterMethods {
    typealias Context = Base.Context
    let base: Base
    let table: RouteTable

    @discardableResult
    func on<Responder: HTTPResponder>(_ path: RouterPath, method: HTTPRequest.Method, responder: Responder) -> Self
    where Responder.Context == Context {
        table.record(method, path)
        base.on(path, method: method, responder: responder)
        return self
    }

    func add(middleware: any MiddlewareProtocol<Request, Response, Context>) -> Self {
        RecordingRouter(base: base.add(middleware: middleware), table: table)
    }
}
