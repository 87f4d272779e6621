import BioAuthCore
import BioAuthServer
import Foundation
import Testing

@testable import BioAuthHTTP

/// Request bodies are read once by a scanner (depth, repeated keys, the outer object's names) and
/// once by the parser; what each failure is called, and which wins when a body has several.
struct StrictJSONTests {
    typealias Body = Wire.LoginChallengeRequest
    let device = "3f2c1a9e-7b41-4c1e-9a53-0f6d2b8e4c10"

    /// The field and reason a 400 would carry; nil, nil if the body decodes.
    func failure(_ text: String) -> (field: String?, reason: String?) {
        do {
            _ = try StrictJSON.decode(Body.self, from: Data(text.utf8))
            return (nil, nil)
        } catch {
            return error.code == .invalidRequest ? (error.field, error.detail) : ("not a 400", nil)
        }
    }

    @Test func aWellFormedBodyDecodesWhateverItsWhitespace() throws {
        let body = try StrictJSON.decode(Body.self, from: Data(" \n\t{ \"userId\" : \"alice\" ,\r\n \"deviceId\":\"\(device)\" } \n".utf8))
        #expect(body == Body(userId: "alice", deviceId: device))
        let escapedValue = try StrictJSON.decode(Body.self, from: Data(#"{"userId":"a\"l\\i\u0063e","deviceId":"\#(device)"}"#.utf8))
        #expect(escapedValue.userId == #"a"l\ice"#, "quotes and backslashes inside a value end nothing early")
    }

    @Test func eachRuleNamesItsFailure() {
        #expect(failure(#"{"userId":"a","deviceId":"b","extra":1}"#) == ("extra", "unknownField"))
        #expect(
            failure(#"{"userId":"a","\u0065xtra":1,"deviceId":"b"}"#) == ("extra", "unknownField"), "an escaped unknown name is unescaped")
        #expect(failure(#"{"userId":"a","deviceId":"b","userId":"c"}"#) == ("userId", "duplicateField"))
        #expect(failure(#"{"userId":"a"}"#) == ("deviceId", "missingField"))
        #expect(failure(#"{"userId":1,"deviceId":"b"}"#) == ("userId", "invalidValue"))
        #expect(failure(#"{"userId":"a","deviceId":"b"} trailing"#) == ("body", "malformedJSON"))
        #expect(
            failure(#"{"userId":"a","deviceId":"b",}"#) == ("body", "malformedJSON"), "a trailing comma, which Foundation's parser accepts")
        #expect(failure(#"{"userId":"a","deviceId":"b" , \#n}"#) == ("body", "malformedJSON"))
        #expect(failure(#"{"userId":"a,}","deviceId":"b"}"#) == (nil, nil), "a comma and brace inside a string are text")
        #expect(failure(#"["userId","deviceId"]"#) == ("body", "malformedJSON"), "the top must be an object")
        #expect(failure(#""userId""#) == ("body", "malformedJSON"))
        #expect(failure("") == ("body", "malformedJSON"))
        #expect(failure(String(repeating: "[", count: 9) + String(repeating: "]", count: 9)) == ("body", "malformedJSON"), "nine levels")
    }

    @Test func namesOnlyTheOuterObjectsKeysAndCountsRepeatsAtEveryLevel() {
        // An unknown name inside a value is the value's business (the parser's type check).
        #expect(failure(#"{"userId":{"extra":1},"deviceId":"b"}"#) == ("userId", "invalidValue"))
        #expect(failure(#"{"userId":{"x":1,"x":2},"deviceId":"b"}"#) == ("x", "duplicateField"))
        // A value equal to a name is not a name; an array's strings are not names.
        #expect(failure(#"{"userId":"deviceId","deviceId":["userId","userId"]}"#) == ("deviceId", "invalidValue"))
    }

    @Test func whenABodyBreaksSeveralRulesTheOrderIsFixed() {
        // Too deep beats everything; a repeated key beats an unknown one; a body that is not JSON
        // is malformed before any of its names is unknown; an unknown name beats a missing one.
        #expect(failure(#"{"extra":1,"userId":"a","userId":"b","deviceId":"#) == ("userId", "duplicateField"))
        #expect(failure(#"{"extra":1,"userId":"a","deviceId":"b""#) == ("body", "malformedJSON"))
        #expect(failure(#"{"extra":1}"#) == ("extra", "unknownField"))
        #expect(failure(#"{"extra":"#) == ("body", "malformedJSON"))
        #expect(failure(#"{"userId":"a","userId":"b","a":"# + String(repeating: "[", count: 9)) == ("body", "malformedJSON"))
    }

    @Test func theMediaTypeIsWhatComesBeforeTheParametersTrimmedAndLowerCased() {
        let cases: [(String, String)] = [
            ("application/json", "application/json"), ("Application/JSON; charset=utf-8", "application/json"),
            (" \tapplication/json \t;x=1", "application/json"),
            ("application/json;", "application/json"), ("", ""), (";application/json", ""), ("application/ json", "application/ json"),
            ("application/jsonx", "application/jsonx"), ("text/plain; application/json", "text/plain"),
        ]
        for (value, type) in cases { #expect(BioAuthRoutes.mediaType(value) == type, "\(value)") }
    }
}
