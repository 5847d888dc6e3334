import Foundation
import SonoraCore
import SonoraFile
import Testing

/// Permission errors need a user the kernel refuses: the tests run as root, for whom
/// a 0600 file is still readable. So the parent (root) prepares files owned by root
/// and runs, as `nobody` through setpriv, both the built `sonora` and this test binary
/// itself filtered to `UnprivilegedChild`, which checks the API from the inside.
private let setprivPath = ["/usr/bin/setpriv", "/bin/setpriv"].first { FileManager.default.isExecutableFile(atPath: $0) }
private let binaryDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
private let childDirectoryKey = "SONORA_UNPRIVILEGED_DIR"

private func runAsNobody(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: setprivPath!)
    process.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", executable] + arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return (process.terminationStatus, output)
}

@Suite("File permissions as an unprivileged user", .serialized,
       .enabled(if: getuid() == 0 && setprivPath != nil && soxPath != nil, "needs root (to prepare files), setpriv and sox"))
final class PermissionTests {
    let directory: URL

    deinit { try? FileManager.default.removeItem(at: directory) }

    init() throws {
        directory = URL(fileURLWithPath: "/tmp").appendingPathComponent("sonora-permissions-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        // secret.wav: root's, 0600. open.wav: readable by all, writable by root only. locked/: root's, 0755.
        let secret = directory.appendingPathComponent("secret.wav").path
        try run(soxPath!, ["-n", "-r", "8000", "-c", "1", "-b", "16", secret, "synth", "0.1", "sine", "440"])
        try FileManager.default.copyItem(atPath: secret, toPath: directory.appendingPathComponent("open.wav").path)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: secret)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: directory.appendingPathComponent("open.wav").path)
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("locked"), withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
    }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    @Test func theCommandLineReportsFilePermissionNamingTheFile() throws {
        let sonora = binaryDirectory.appendingPathComponent("sonora").path
        try #require(FileManager.default.isExecutableFile(atPath: sonora), "build the sonora product first")
        let info = try runAsNobody(sonora, ["info", path("secret.wav")])
        #expect(info.status != 0 && info.output.contains("(-54)") && info.output.contains(path("secret.wav")), "\(info.output)")
        let convert = try runAsNobody(sonora, ["convert", path("open.wav"), path("locked/out.wav")])
        #expect(convert.status != 0 && convert.output.contains("(-54)") && convert.output.contains(path("locked/out.wav")), "\(convert.output)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: path("locked")).isEmpty, "nothing half-written is left")
        // Root reads the same file: the refusal really was the kernel's.
        #expect(try AudioFile.open(path("secret.wav")).frameCount == 800)
    }

    @Test func theAPIReportsFilePermissionFromInside() throws {
        let result = try runAsNobody(CommandLine.arguments[0], ["--testing-library", "swift-testing", "--filter", "UnprivilegedChild"],
                                     environment: [childDirectoryKey: directory.path])
        #expect(result.status == 0, "the unprivileged checks failed:\n\(result.output)")
        #expect(result.output.contains("permissionErrorsCarryTheirCode() passed"), "the child ran its checks: \(result.output)")
    }
}

/// Runs only inside the child started by `PermissionTests`, as `nobody`.
@Suite("UnprivilegedChild", .enabled(if: ProcessInfo.processInfo.environment[childDirectoryKey] != nil && getuid() != 0))
struct UnprivilegedChild {
    let directory = ProcessInfo.processInfo.environment[childDirectoryKey] ?? "/nonexistent"

    @Test func permissionErrorsCarryTheirCode() throws {
        let secret = #expect(throws: AudioError.self) { try AudioFile.open("\(directory)/secret.wav") }
        #expect(secret?.code == .filePermission && secret?.message.contains("secret.wav") == true)
        let readWrite = #expect(throws: AudioError.self) { try AudioFile.open("\(directory)/open.wav", mode: .readWrite) }
        #expect(readWrite?.code == .filePermission && readWrite?.message.contains("open.wav") == true)
        #expect(try AudioFile.open("\(directory)/open.wav").frameCount == 800)
        let format = StreamFormat.linearPCM(sampleRate: 8000, channels: 1, sample: .int16)
        for type in [AudioFileType.wave, .caf] {
            let created = #expect(throws: AudioError.self) { try AudioFile.create("\(directory)/locked/new.\(type)", type: type, format: format) }
            #expect(created?.code == .filePermission)
        }
        let ima4 = #expect(throws: AudioError.self) {
            try AudioFile.create("\(directory)/locked/new.caf", type: .caf, format: .appleIMA4(sampleRate: 8000, channels: 1))
        }
        #expect(ima4?.code == .filePermission)
        let extFile = #expect(throws: AudioError.self) { try ExtAudioFile.open("\(directory)/secret.wav") }
        #expect(extFile?.code == .filePermission)
    }
}
