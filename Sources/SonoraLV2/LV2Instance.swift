import CLilv
import Foundation
import SonoraCore

/// One instantiated plugin: the lilv instance, the host features it was given, and
/// the plugin's C entry points taken out once so the render calls them directly.
final class LV2Instance: @unchecked Sendable {
    let world: LV2World
    let plugin: OpaquePointer
    let description: LV2PluginDescription
    let instance: UnsafeMutablePointer<LilvInstance>
    let features: LV2HostFeatures
    let sampleRate: Double
    let maximumBlockLength: Int
    let handle: LV2_Handle?
    let connectPort: @convention(c) (LV2_Handle?, UInt32, UnsafeMutableRawPointer?) -> Void
    let run: @convention(c) (LV2_Handle?, UInt32) -> Void
    private(set) var isActive = false

    /// Checks what the plugin needs, then instantiates it with Sonora's features.
    /// Refusals name the plugin and the reason (missing feature, broken bundle, no instance).
    init(
        world: LV2World, description: LV2PluginDescription, sampleRate: Double, maximumBlockLength: Int,
        sequenceSize: Int, workerMode: LV2Worker.Mode
    ) throws(AudioError) {
        self.world = world
        self.description = description
        self.sampleRate = sampleRate
        self.maximumBlockLength = maximumBlockLength
        let plugin = try world.lilvPlugin(description.uri)
        self.plugin = plugin
        if let feature = description.missingFeatures.first {
            throw AudioError(
                .failedInitialization,
                "LV2 plugin \(description.uri) requires feature \(feature), which Sonora does not provide")
        }
        if let port = description.ports.first(where: { $0.kind == .unknown && !$0.isOptional }) {
            throw AudioError(
                .failedInitialization,
                "LV2 plugin \(description.uri): port \(port.index) '\(port.symbol)' has a type Sonora cannot connect")
        }
        let verified = world.withLock { lilv_plugin_verify(plugin) }
        guard verified else {
            throw AudioError(
                .invalidFile,
                "LV2 plugin \(description.uri) fails lilv's checks (broken bundle: missing binary, name or port data) in \(description.bundlePath ?? "?")")
        }
        guard let library = description.libraryPath, FileManager.default.isReadableFile(atPath: library) else {
            throw AudioError(
                .fileNotFound, "LV2 plugin \(description.uri): binary \(description.libraryPath ?? "(none)") is missing")
        }
        let features = try LV2HostFeatures(
            pluginName: description.name, urids: world.urids, sampleRate: sampleRate,
            maximumBlockLength: maximumBlockLength, sequenceSize: sequenceSize, workerMode: workerMode)
        self.features = features
        let array = features.array
        let made = world.withLock { lilv_plugin_instantiate(plugin, sampleRate, array) }
        features.log.drain()
        guard let made else {
            throw AudioError(
                .failedInitialization,
                "LV2 plugin \(description.uri) returned no instance (at \(Int(sampleRate)) Hz, max block \(maximumBlockLength))")
        }
        instance = made
        let descriptor = made.pointee.lv2_descriptor!
        handle = made.pointee.lv2_handle
        guard let connect = descriptor.pointee.connect_port, let run = descriptor.pointee.run else {
            lilv_instance_free(made)
            throw AudioError(.failedInitialization, "LV2 plugin \(description.uri) has no connect_port or run")
        }
        connectPort = connect
        self.run = run
        let worker = extensionData(LV2URI.workerInterface)?.assumingMemoryBound(to: LV2_Worker_Interface.self)
        features.worker.attach(interface: worker.map { UnsafePointer($0) }, handle: handle)
    }

    deinit {
        features.worker.stop()
        deactivate()
        lilv_instance_free(instance)
    }

    func extensionData(_ uri: String) -> UnsafeRawPointer? {
        guard let function = instance.pointee.lv2_descriptor.pointee.extension_data else { return nil }
        return uri.withCString { function($0) }
    }

    func activate() {
        guard !isActive else { return }
        instance.pointee.lv2_descriptor.pointee.activate?(handle)
        isActive = true
    }

    func deactivate() {
        guard isActive else { return }
        instance.pointee.lv2_descriptor.pointee.deactivate?(handle)
        isActive = false
    }
}
