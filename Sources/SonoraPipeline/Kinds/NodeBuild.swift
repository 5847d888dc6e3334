import Foundation
import SonoraCore
import SonoraUnits

/// What a node kind's `make` works with: the node as written, the engine's format, what
/// the pipeline is built for, and where problems go.
public struct NodeBuild {
    public let spec: NodeSpec
    public let kind: NodeKind
    public let configuration: PipelineConfiguration
    public let target: PipelineBuilder.Target
    /// The engine's format, which every element runs at unless the kind says otherwise.
    public let format: StreamFormat
    var diagnostics: [Diagnostic] = []
    /// Files the node reads, stamped when built, so a reload can tell they changed.
    var inputFiles: [FileStamp] = []
    /// Names of the node's sources, input element by element, when its kind has them
    /// (a mixer3d's); `NODE.NAME` on the control socket.
    public var sources: [String] = []
    /// Width of each input element as its source gives it (sources built already).
    public var inputChannels: [Int: Int] = [:]
    /// Output widths the kind sets (a channel map's: its map's length); nil: inferred.
    public var outputChannels: [Int]?

    /// The width the node's input `element` runs at: declared, else its source's, else the engine's.
    public func inputWidth(_ element: Int) -> Int {
        spec.channels?.input?.width(element) ?? inputChannels[element] ?? configuration.engine.channels
    }

    init(spec: NodeSpec, kind: NodeKind, configuration: PipelineConfiguration, target: PipelineBuilder.Target, format: StreamFormat) {
        self.spec = spec
        self.kind = kind
        self.configuration = configuration
        self.target = target
        self.format = format
    }

    public var isCheckOnly: Bool { if case .check = target { true } else { false } }
    public var isLive: Bool { if case .live = target { true } else { false } }

    public mutating func error(_ location: SourceLocation, _ message: String) {
        diagnostics.append(Diagnostic(location, message))
    }

    /// An error about this node, at the node or at one of its options.
    public mutating func error(at key: String? = nil, _ message: String) {
        let location = key.flatMap { spec.options[$0]?.location } ?? spec.location
        error(location, "node '\(spec.id)': \(message)")
    }

    public func option(_ key: String) -> LocatedOption? { spec.options[key] }

    /// A file option resolved against the config's folder, checked for its type: an input
    /// file must be readable (and is stamped), an output file's folder must exist and be
    /// writable. nil (with an error) otherwise.
    public mutating func path(_ key: String) -> String? {
        guard let option = spec.options[key], let written = option.value.text else { return nil }
        let path = configuration.resolvedPath(written)
        switch kind.option(key)?.type {
        case .inputFile:
            guard FileManager.default.isReadableFile(atPath: path), let stamp = FileStamp(path: path) else {
                error(at: key, "file '\(Diagnostic.excerpt(written))' does not exist or is not readable")
                return nil
            }
            guard !stamp.isDirectory else {
                error(at: key, "'\(Diagnostic.excerpt(written))' is a folder, not a file")
                return nil
            }
            inputFiles.append(stamp)
        case .outputFile:
            let folder = (path as NSString).deletingLastPathComponent
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
                error(at: key, "folder '\(Diagnostic.excerpt(folder))' for '\(Diagnostic.excerpt(written))' does not exist")
                return nil
            }
            guard FileManager.default.isWritableFile(atPath: folder) else {
                error(at: key, "cannot write into '\(Diagnostic.excerpt(folder))'")
                return nil
            }
            if let stamp = FileStamp(path: path), stamp.isDirectory {
                error(at: key, "'\(Diagnostic.excerpt(written))' is a folder, not a file")
                return nil
            }
        default:
            break
        }
        return path
    }
}

/// Which file a path names and its state (device, inode, size, modification time): a
/// reload rebuilds a node whose file changed on disk instead of silently keeping the
/// old audio.
public struct FileStamp: Hashable, Sendable {
    public let path: String
    let device: UInt64
    let inode: UInt64
    let size: Int64
    let modified: Int64
    let isDirectory: Bool

    public init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        self.path = path
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        isDirectory = (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// Whether the file is still the one stamped, unchanged.
    public var isCurrent: Bool { FileStamp(path: path) == self }
}

extension NodeBuild {
    /// An error about this node from a thrown error (an `AudioError`'s message without its code).
    public mutating func error(at key: String? = nil, _ thrown: any Error) {
        error(at: key, (thrown as? AudioError)?.message ?? "\(thrown)")
    }
}
