import Foundation
import SonoraCore
import SonoraLV2
import Testing

/// Every way a plugin can be unusable gets a clear error naming the plugin and the
/// reason — from tiny bundles written here, each with one fault.
@Suite struct RefusalTests {
    static let ampBinary = "/usr/lib/lv2/eg-amp.lv2/amp.so"

    /// Writes a bundle `name.lv2` (manifest + plugin.ttl, optionally eg-amp's binary) under a fresh directory.
    static func bundle(
        _ name: String, uri: String = "http://example.org/sonora-test#plugin", body: String, copyBinary: Bool = true
    ) throws -> (root: String, world: LV2World) {
        let root = Fixtures.directory + "/refusal-\(name)-\(UUID().uuidString.prefix(6))"
        let path = root + "/\(name).lv2"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let manifest = """
            @prefix lv2: <http://lv2plug.in/ns/lv2core#> .
            @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
            <\(uri)> a lv2:Plugin ; lv2:binary <amp.so> ; rdfs:seeAlso <plugin.ttl> .
            """
        try manifest.write(toFile: path + "/manifest.ttl", atomically: true, encoding: .utf8)
        let prefixes = """
            @prefix lv2: <http://lv2plug.in/ns/lv2core#> .
            @prefix doap: <http://usefulinc.com/ns/doap#> .

            """
        try (prefixes + body).write(toFile: path + "/plugin.ttl", atomically: true, encoding: .utf8)
        if copyBinary { try FileManager.default.copyItem(atPath: ampBinary, toPath: path + "/amp.so") }
        return (root, LV2World(path: root))
    }

    static let ampPorts = """
        lv2:port [ a lv2:InputPort , lv2:ControlPort ; lv2:index 0 ; lv2:symbol "gain" ; lv2:name "Gain" ;
                   lv2:default 0.0 ; lv2:minimum -90.0 ; lv2:maximum 24.0 ] ,
                 [ a lv2:AudioPort , lv2:InputPort ; lv2:index 1 ; lv2:symbol "in" ; lv2:name "In" ] ,
                 [ a lv2:AudioPort , lv2:OutputPort ; lv2:index 2 ; lv2:symbol "out" ; lv2:name "Out" ] .
        """

    @Test func unknownRequiredFeatureIsNamed() throws {
        let uri = "http://lv2plug.in/plugins/eg-amp"
        let (_, world) = try Self.bundle("feature", uri: uri, body: """
            <\(uri)> a lv2:Plugin ; doap:name "Needs teleport" ;
                lv2:requiredFeature <http://example.org/ns#teleport> ;
            \(Self.ampPorts)
            """)
        let error = try #require(throws: AudioError.self) { try LV2Unit(uri: uri, world: world) }
        #expect(error.message.contains("http://example.org/ns#teleport"))
        #expect(error.message.contains(uri))
        #expect(try world.plugin(uri).missingFeatures == ["http://example.org/ns#teleport"])
    }

    /// buf-size:fixedBlockLength is offered only when the caller says its graph guarantees it.
    @Test func fixedBlockLengthNeedsAGuarantee() throws {
        let uri = "http://lv2plug.in/plugins/eg-amp"
        let (_, world) = try Self.bundle("fixed", uri: uri, body: """
            <\(uri)> a lv2:Plugin ; doap:name "Needs fixed blocks" ;
                lv2:requiredFeature <\(LV2URI.fixedBlockLength)> ;
            \(Self.ampPorts)
            """)
        let error = try #require(throws: AudioError.self) { try LV2Unit(uri: uri, world: world) }
        #expect(error.message.contains(LV2URI.fixedBlockLength))
        let unit = try LV2Unit(uri: uri, world: world, options: .init(blockLengthGuarantees: [LV2URI.fixedBlockLength]))
        #expect(unit.plugin.requiredFeatures == [LV2URI.fixedBlockLength])
    }

    @Test func missingBinaryIsRefused() throws {
        let uri = "http://lv2plug.in/plugins/eg-amp"
        let (_, world) = try Self.bundle("nobinary", uri: uri, body: """
            <\(uri)> a lv2:Plugin ; doap:name "No binary" ;
            \(Self.ampPorts)
            """, copyBinary: false)
        let error = try #require(throws: AudioError.self) { try LV2Unit(uri: uri, world: world) }
        #expect(error.message.contains(uri))
        #expect(error.message.contains("binary") || error.message.contains("broken bundle"))
    }

    @Test func portWithoutSymbolIsABrokenBundle() throws {
        let uri = "http://lv2plug.in/plugins/eg-amp"
        let (_, world) = try Self.bundle("nosymbol", uri: uri, body: """
            <\(uri)> a lv2:Plugin ; doap:name "Port without symbol" ;
                lv2:port [ a lv2:InputPort , lv2:ControlPort ; lv2:index 0 ; lv2:name "Gain" ] ,
                         [ a lv2:AudioPort , lv2:InputPort ; lv2:index 1 ; lv2:symbol "in" ; lv2:name "In" ] ,
                         [ a lv2:AudioPort , lv2:OutputPort ; lv2:index 2 ; lv2:symbol "out" ; lv2:name "Out" ] .
            """)
        let error = try #require(throws: AudioError.self) { try LV2Unit(uri: uri, world: world) }
        #expect(error.code == .invalidFile)
        #expect(error.message.contains(uri))
    }

    @Test func binaryWithoutThePluginReturnsNoInstance() throws {
        // The bundle says eg-amp's binary holds this URI; it does not.
        let uri = "http://example.org/sonora-test#impostor"
        let (_, world) = try Self.bundle("impostor", uri: uri, body: """
            <\(uri)> a lv2:Plugin ; doap:name "Impostor" ;
            \(Self.ampPorts)
            """)
        let error = try #require(throws: AudioError.self) { try LV2Unit(uri: uri, world: world) }
        #expect(error.code == .failedInitialization)
        #expect(error.message.contains("no instance"))
    }

    @Test func malformedTurtleLeavesNoPlugin() throws {
        let uri = "http://example.org/sonora-test#plugin"
        let (_, world) = try Self.bundle("malformed", uri: uri, body: "<\(uri)> a lv2:Plugin ; lv2:port [ this is not turtle")
        // lilv skips what it cannot parse; the plugin is then missing, or refused as broken.
        #expect(throws: AudioError.self) { try LV2Unit(uri: uri, world: world) }
    }

    @Test func unknownURIIsNamed() throws {
        let uri = "http://example.org/no/such/plugin"
        let error = try #require(throws: AudioError.self) { try LV2Unit(uri: uri, world: Fixtures.world) }
        #expect(error.code == .componentUnsupportedType)
        #expect(error.message.contains(uri))
    }

    @Test func bundleThatIsNotADirectory() throws {
        let error = try #require(throws: AudioError.self) { try LV2World().loadBundle(at: "/nonexistent/x.lv2") }
        #expect(error.message.contains("/nonexistent/x.lv2"))
    }

    @Test func lv2PathIsHonoured() throws {
        // A world over an empty directory has no plugins; over /usr/lib/lv2 it has eg-amp.
        let empty = Fixtures.directory + "/empty-\(UUID().uuidString.prefix(6))"
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        #expect(LV2World(path: empty).pluginURIs.isEmpty)
        #expect(LV2World(path: "/usr/lib/lv2").pluginURIs.contains("http://lv2plug.in/plugins/eg-amp"))
    }
}
