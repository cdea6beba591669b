/// Ends the run with `message` when `condition` does not hold. An optimized build drops `precondition`'s message;
/// this one reaches libFuzzer's log beside the input that broke the property.
func require(
    _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID,
    line: UInt = #line
) {
    if !condition() { fatalError(message(), file: file, line: line) }
}
