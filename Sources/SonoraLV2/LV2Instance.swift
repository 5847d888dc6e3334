import CLV2Support
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
    /// One float per port, where control ports stay connected for the instance's life.
    let values: UnsafeMutablePointer<Float>
    /// Per atom port: its buffer and capacity (rsz:minimumSize or the host's default, whichever is larger).
    let atomBuffers: [Int: (buffer: UnsafeMutableRawPointer, capacity: Int)]
    /// Where audio and CV ports point until a render connects them (some plugins read ports in activate()).
    private let idleAudio: UnsafeMutablePointer<Float>
    private var wasActivated = false

    /// Checks what the plugin needs, then instantiates it with Sonora's features.
    /// Refusals name the plugin and the reason (missing feature, broken bundle, no instance).
    init(
        world: LV2World, description: LV2PluginDescription, sampleRate: Double, maximumBlockLength: Int,
        sequenceSize: Int, workerMode: LV2Worker.Mode, extraFeatures: Set<String> = []
    ) throws(AudioError) {
        self.world = world
        self.description = description
        self.sampleRate = sampleRate
        self.maximumBlockLength = maximumBlockLength
        let plugin = try world.lilvPlugin(description.uri)
        self.plugin = plugin
        if let feature = description.missingFeatures.first(where: { !extraFeatures.contains($0) }) {
            throw AudioError(
                .failedInitialization,
                "LV2 plugin \(description.uri) requires feature \(feature), which Sonora does not provide")
        }
        if let port = description.ports.first(where: { $0.kind == .unknown && !$0.isOptional }) {
            throw AudioError(
                .failedInitialization,
                "LV2 plugin \(description.uri): port \(port.index) '\(port.symbol)' has a type Sonora cannot connect")
        }
        if !description.problems.isEmpty {
            throw AudioError(
                .invalidFile,
                "LV2 plugin \(description.uri) has a broken description in \(description.bundlePath ?? "?"): \(description.problems.joined(separator: "; "))")
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
            maximumBlockLength: maximumBlockLength, sequenceSize: sequenceSize, workerMode: workerMode,
            extraFeatures: extraFeatures.intersection([LV2URI.fixedBlockLength, LV2URI.powerOf2BlockLength]))
        self.features = features
        let array = features.array
        let made = preservingFloatingPointState { world.withLock { lilv_plugin_instantiate(plugin, sampleRate, array) } }
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
            world.withLock { lilv_instance_free(made) }
            throw AudioError(.failedInitialization, "LV2 plugin \(description.uri) has no connect_port or run")
        }
        connectPort = connect
        self.run = run
        // Connect every port at once so that activate() and cleanup() never see a dangling one.
        values = .allocate(capacity: max(1, description.ports.count))
        values.initialize(repeating: 0, count: max(1, description.ports.count))
        idleAudio = .allocate(capacity: maximumBlockLength * 2)
        idleAudio.initialize(repeating: 0, count: maximumBlockLength * 2)
        var atoms: [Int: (UnsafeMutableRawPointer, Int)] = [:]
        for port in description.ports {
            switch port.kind {
            case .control:
                values[port.index] = port.defaultValue ?? port.minimum ?? 0
                connect(handle, UInt32(port.index), values + port.index)
            case .audio, .cv:
                connect(handle, UInt32(port.index), idleAudio + (port.direction == .input ? 0 : maximumBlockLength))
            case .atom:
                let capacity = max(sequenceSize, port.minimumSize ?? 0)
                let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
                buffer.initializeMemory(as: UInt8.self, repeating: 0, count: capacity)
                // An empty sequence, so a plugin that reads it before the first render finds nothing.
                buffer.storeBytes(of: UInt32(8), as: UInt32.self)
                buffer.storeBytes(of: world.urids.map(LV2URI.atomSequence), toByteOffset: 4, as: UInt32.self)
                atoms[port.index] = (buffer, capacity)
                connect(handle, UInt32(port.index), buffer)
            case .unknown:
                connect(handle, UInt32(port.index), nil)
            }
        }
        atomBuffers = atoms
        let worker = extensionData(LV2URI.workerInterface)?.assumingMemoryBound(to: LV2_Worker_Interface.self)
        features.worker.attach(interface: worker.map { UnsafePointer($0) }, handle: handle)
    }

    deinit {
        features.worker.stop()
        if !wasActivated {
            // Some plugins (swh's IIR filters) allocate in activate() and free in cleanup()
            // unconditionally; a never-activated instance would free garbage. Every host in
            // practice activates, so do that once here.
            activate()
        }
        deactivate()
        // lilv keeps a world-wide, unlocked list of loaded libraries that freeing an instance updates.
        let instance = self.instance
        preservingFloatingPointState { world.withLock { lilv_instance_free(instance) } }
        values.deallocate()
        idleAudio.deallocate()
        for (buffer, _) in atomBuffers.values { buffer.deallocate() }
    }

    func extensionData(_ uri: String) -> UnsafeRawPointer? {
        guard let function = instance.pointee.lv2_descriptor.pointee.extension_data else { return nil }
        return uri.withCString { function($0) }
    }

    func activate() {
        guard !isActive else { return }
        preservingFloatingPointState { instance.pointee.lv2_descriptor.pointee.activate?(handle) }
        isActive = true
        wasActivated = true
    }

    func deactivate() {
        guard isActive else { return }
        preservingFloatingPointState { instance.pointee.lv2_descriptor.pointee.deactivate?(handle) }
        isActive = false
    }
}

/// Runs `body` (a call into plugin code) and restores the thread's floating-point control
/// state afterwards: plugins set flush-to-zero and rounding modes on their caller's thread.
@inline(__always)
func preservingFloatingPointState<T>(_ body: () throws -> T) rethrows -> T {
    let saved = sonora_fp_state_save()
    defer { sonora_fp_state_restore(saved) }
    return try body()
}
