import Foundation
import SonoraTestSupport
import Testing

@Suite struct TemporaryFolderTests {
    @Test("a folder is unique, and removed with its contents when it goes away")
    func removedAtTheEnd() throws {
        var folder: TemporaryFolder? = try TemporaryFolder(prefix: "sonora-support-test")
        let path = folder!.path
        let other = try TemporaryFolder(prefix: "sonora-support-test")
        #expect(other.path != path)
        try FileManager.default.createDirectory(atPath: folder!.path("nested/deeper"), withIntermediateDirectories: true)
        try Data("x".utf8).write(to: folder!.url("nested/deeper/file.txt"))
        #expect(FileManager.default.fileExists(atPath: path + "/nested/deeper/file.txt"))
        folder = nil
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test("withTemporaryFolder removes the folder after the block, also when it throws")
    func scoped() throws {
        let path = try withTemporaryFolder { folder in
            try Data("x".utf8).write(to: folder.url("a"))
            return folder.path
        }
        #expect(!FileManager.default.fileExists(atPath: path))
        struct Failure: Error {}
        var thrownPath = ""
        #expect(throws: Failure.self) {
            try withTemporaryFolder { folder in
                thrownPath = folder.path
                throw Failure()
            }
        }
        #expect(!thrownPath.isEmpty && !FileManager.default.fileExists(atPath: thrownPath))
    }

    @Test("the package root holds Package.swift")
    func packageRoot() {
        #expect(FileManager.default.fileExists(atPath: PackageRoot.path("Package.swift")))
    }
}
