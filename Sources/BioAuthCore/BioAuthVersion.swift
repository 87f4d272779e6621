/// This release of BioAuth: what `bioauth --version` and `bioauth-server --version` print and the
/// server logs at start.
public enum BioAuthVersion {
    public static let current = "0.3.0"
}
