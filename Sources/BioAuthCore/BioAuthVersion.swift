/// This release of BioAuth: what `bioauth --version` and `bioauth-server --version` print and the
/// server logs at start. It moves with each release's changes, and `CHANGELOG.md`'s newest release
/// names it (a test holds the two together).
public enum BioAuthVersion {
    public static let current = "0.4.0"
}
