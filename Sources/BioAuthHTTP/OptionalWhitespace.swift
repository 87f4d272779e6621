extension StringProtocol {
    /// Without the optional white space around it that HTTP allows in header values and list
    /// members: spaces and tabs, nothing else (RFC 9110 §5.6.3).
    var trimmingOptionalWhitespace: SubSequence {
        func isSpace(_ character: Character) -> Bool { character == " " || character == "\t" }
        var trimmed = self[...].drop(while: isSpace)
        while let last = trimmed.last, isSpace(last) { trimmed.removeLast() }
        return trimmed
    }
}
