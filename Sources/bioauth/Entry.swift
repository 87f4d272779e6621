import ArgumentParser
import BioAuthCLI

/// `bioauth`: forwards to `BioAuthCommand` in BioAuthCLI.
@main
enum Entry {
    static func main() async {
        do {
            var command = try BioAuthCommand.parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            BioAuthCommand.exit(withError: error)
        }
    }
}
