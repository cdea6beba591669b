import Foundation

/// The input file or standard input, read in large chunks; its size when it is a regular file.
final class InputSource {
    let descriptor: Int32
    let size: Int64?
    private(set) var bytesRead: Int64 = 0
    private let ownsDescriptor: Bool
    private var buffer: UnsafeMutableBufferPointer<UInt8>

    static let chunkSize = 1 << 20

    init(path: String) throws(ImportFailure) {
        if path == "-" {
            descriptor = 0
            ownsDescriptor = false
        } else {
            descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                throw .usage("cannot open \(path): \(String(cString: strerror(errno)))")
            }
            ownsDescriptor = true
        }
        var status = stat()
        if fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG {
            size = Int64(status.st_size)
        } else if path != "-", fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR {
            close(descriptor)
            throw .usage("\(path) is a directory")
        } else {
            size = nil
        }
        buffer = .allocate(capacity: Self.chunkSize)
    }

    /// Whether `path` names the input itself (the same file, by device and inode), which writing would destroy.
    func isSameFile(as path: String) -> Bool {
        var input = stat()
        var other = stat()
        guard fstat(descriptor, &input) == 0, stat(path, &other) == 0 else { return false }
        return input.st_dev == other.st_dev && input.st_ino == other.st_ino
    }

    deinit {
        buffer.deallocate()
        if ownsDescriptor { close(descriptor) }
    }

    /// The next chunk, empty at the end of the input. Throws on a read error.
    func read<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) throws -> R {
        while true {
            let count = Glibc.read(descriptor, buffer.baseAddress, Self.chunkSize)
            if count < 0 {
                if errno == EINTR { continue }
                throw ImportFailure.stopped("cannot read the input: \(String(cString: strerror(errno)))")
            }
            bytesRead += Int64(count)
            return try body(UnsafeBufferPointer(rebasing: buffer[0..<count]))
        }
    }
}
