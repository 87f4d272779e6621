import Foundation
import Synchronization
import X509

/// Fetches a URL's body (200 only, at most ``AttestationStatusSource/maximumSize`` bytes): given
/// by the executable that reads lists over HTTP (`BioAuthWebhooks.attestationStatusFetch`), so
/// that the verification module links no HTTP client.
public typealias AttestationStatusFetch = @Sendable (URL) async throws -> Data

/// Where an ``AttestationStatusList`` is read from: Google's URL, a mirror, or a file that
/// `bioauth attestation status update` keeps for a deployment without outbound HTTP.
public enum AttestationStatusSource: Sendable, Hashable, CustomStringConvertible {
    /// Fetched over HTTPS (plain HTTP only from loopback); the list is as of the fetch.
    case url(URL)
    /// Read from a file; the list is as of the file's modification time.
    case file(String)

    /// Google's list (``AttestationStatusList/googleURL``).
    public static let google = Self.url(AttestationStatusList.googleURL)

    /// An `https://` URL (`http://` to loopback), or else a file path.
    public init(_ text: String) throws(AttestationStatusListError) {
        if text.hasPrefix("https://") || text.hasPrefix("http://") {
            guard let url = URL(string: text), let host = url.host else { throw AttestationStatusListError("\(text) is not a URL") }
            guard url.scheme == "https" || ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host) else {
                throw AttestationStatusListError(
                    "the list must come over https (http only from loopback): a list changed in transit hides revocations")
            }
            self = .url(url)
        } else {
            guard !text.isEmpty else { throw AttestationStatusListError("an empty source") }
            self = .file(text)
        }
    }

    public var description: String {
        switch self {
        case .url(let url): url.absoluteString
        case .file(let path): path
        }
    }

    /// The largest list read, in bytes (Google's is well under 1 MiB).
    public static let maximumSize = 16 << 20

    /// Reads the list, a URL's with `fetch`; `now` is what a fetched list is as of.
    public func load(now: Date, fetch: AttestationStatusFetch? = nil) async throws(AttestationStatusListError) -> AttestationStatus.Loaded {
        switch self {
        case .file(let path):
            let url = URL(fileURLWithPath: path)
            guard let data = try? Data(contentsOf: url), let attributes = try? FileManager.default.attributesOfItem(atPath: path),
                let modified = attributes[.modificationDate] as? Date
            else { throw AttestationStatusListError("cannot read \(path)") }
            guard data.count <= Self.maximumSize else {
                throw AttestationStatusListError("\(path) is larger than \(Self.maximumSize) bytes")
            }
            return AttestationStatus.Loaded(list: try AttestationStatusList(json: data), asOf: modified)
        case .url(let url):
            guard let fetch else { throw AttestationStatusListError("no HTTP client to fetch \(url.absoluteString) with") }
            let body: Data
            do { body = try await fetch(url) } catch let error as AttestationStatusListError { throw error } catch {
                throw AttestationStatusListError("cannot fetch \(url.absoluteString)")
            }
            return AttestationStatus.Loaded(list: try AttestationStatusList(json: body), asOf: now)
        }
    }
}

/// The status list an ``AndroidKeyAttestationVerifier`` checks, shared and replaced while the
/// server runs: a refresher calls ``refresh(now:)`` on a schedule, and every verification reads the
/// list in force.
///
/// **Fails closed:** while no list is loaded, or the one loaded is older than ``maximumAge``, every
/// Android attestation is refused as ``AttestationError/Check/statusUnknown`` — a keybox leaked
/// last week must not pass because the refresher stopped.
public final class AttestationStatus: Sendable, Hashable, CustomStringConvertible {
    /// A list and the time it is as of.
    public struct Loaded: Sendable, Hashable {
        public let list: AttestationStatusList
        public let asOf: Date
        public init(list: AttestationStatusList, asOf: Date) {
            self.list = list
            self.asOf = asOf
        }
    }

    /// Seven days: how old a list may be before attestations are refused.
    public static let defaultMaximumAge: TimeInterval = 7 * 86_400
    /// How often a refresher reads the source: hourly, as Google's `Cache-Control` allows.
    public static let refreshInterval: Duration = .seconds(3600)
    /// How soon a refresher tries again after a failed read.
    public static let retryInterval: Duration = .seconds(300)

    public let source: AttestationStatusSource?
    public let maximumAge: TimeInterval
    private let fetch: AttestationStatusFetch?
    private let state: Mutex<Loaded?>

    /// A status read from `source` (a URL's with `fetch`) by ``refresh(now:)``, or given its list
    /// now (`loaded`) for a caller that keeps it up to date itself with ``update(_:)``.
    public init(
        source: AttestationStatusSource? = nil, maximumAge: TimeInterval = defaultMaximumAge, fetch: AttestationStatusFetch? = nil,
        loaded: Loaded? = nil
    ) {
        self.source = source
        self.maximumAge = maximumAge
        self.fetch = fetch
        self.state = Mutex(loaded)
    }

    /// The list in force, if any.
    public var loaded: Loaded? { state.withLock { $0 } }

    /// Puts `loaded` in force unless the one in force is newer.
    public func update(_ loaded: Loaded) {
        state.withLock { current in
            if let current, current.asOf > loaded.asOf { return }
            current = loaded
        }
    }

    /// Reads the source and puts the list in force; the list in force stays when the read fails.
    @discardableResult
    public func refresh(now: Date) async throws(AttestationStatusListError) -> Loaded {
        guard let source else { throw AttestationStatusListError("no source to refresh from") }
        let loaded = try await source.load(now: now, fetch: fetch)
        update(loaded)
        return loaded
    }

    /// How old the list in force is at `now`; nil when none is loaded.
    public func age(at now: Date) -> TimeInterval? {
        loaded.map { max(0, now.timeIntervalSince($0.asOf)) }
    }

    /// Why Android attestations are refused at `now`, for the readiness probe; nil while the list is current.
    public func note(at now: Date) -> String? {
        guard let age = age(at: now) else { return "no attestation status list is loaded yet: Android enrolments are refused (503)" }
        guard age > maximumAge else { return nil }
        return
            "the attestation status list is \(Int(age / 3600)) hours old (limit \(Int(maximumAge / 3600))): Android enrolments are refused (503)"
    }

    /// Refuses `chain` if a certificate of it is listed, or if the list cannot tell.
    func check(_ chain: [Certificate], at now: Date) throws(AttestationError) {
        guard let loaded, now.timeIntervalSince(loaded.asOf) <= maximumAge else {
            throw AttestationError(.statusUnknown, "the attestation status list is missing or too old to tell whether the chain is revoked")
        }
        for certificate in chain {
            if let entry = loaded.list.entry(for: certificate.serialNumber) {
                throw AttestationError(.certificateStatus, "a certificate of the chain is \(entry) on the attestation status list")
            }
        }
    }

    public var description: String { "AttestationStatus(\(source?.description ?? "no source"), maximumAge: \(Int(maximumAge)) s)" }
    public static func == (lhs: AttestationStatus, rhs: AttestationStatus) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
