import Foundation
import SonoraCore
import SonoraDSP
import SonoraHAL
import SonoraUnits
import Synchronization

/// An OpenAL device (ALCdevice): where the contexts made on it are heard.
///
/// - `playback(_:)`: any Sonora device (an ALSA PCM, `null`, `sonora:` …) through an I/O
///   unit whose input renders the device's contexts; it runs from the first context on.
/// - `loopback(frequency:channels:)`: nothing runs by itself; `render(into:frames:)` mixes
///   the contexts on the caller's thread into the caller's buffer (ALC_SOFT_loopback's
///   alcRenderSamplesSOFT) — for tests and offline work.
///
/// Buffers belong to the device and are shared by its contexts. The device's mixing rate is
/// fixed by the first context (its `frequency` attribute, else 48 kHz for playback).
/// All API state of the device and its contexts is guarded by one lock; the render side
/// reads the contexts through a fixed table of unretained pointers.
public final class ALDevice: @unchecked Sendable {
    public enum Kind: Sendable, Hashable {
        case playback(String), loopback
    }

    public let kind: Kind
    /// Output channels of the mix: 1, 2, 4 (quad) or 6 (5.1).
    public let channels: Int
    /// The mixing rate (ALC_FREQUENCY).
    public private(set) var frequency: Int

    let lock = NSLock()
    var contexts: [ALContext] = []
    private var closed = false
    private var io: IOUnit?
    private var hardware: (any AudioDevice)?

    /// Render side: the contexts being mixed (unretained `ALContextRenderer`s, 0 when free),
    /// and an epoch that is odd while a mix runs (so a context is freed only after it).
    static let slotCount = 16
    private let slots: UnsafeMutablePointer<Atomic<Int>>
    private let epoch = Atomic<Int>(0)
    private let scratch: OwnedAudioBufferList
    static let maximumFrames = 4096
    /// Slice of a loopback render while parameter changes still wait to be sent.
    static let catchUpFrames = 16

    private init(kind: Kind, frequency: Int, channels: Int) throws(ALError) {
        self.kind = kind
        self.frequency = frequency
        self.channels = channels
        slots = .allocate(capacity: Self.slotCount)
        for index in 0..<Self.slotCount { (slots + index).initialize(to: Atomic(0)) }
        do {
            scratch = try OwnedAudioBufferList(channelCount: channels, frameCapacity: Self.maximumFrames)
        } catch {
            throw .outOfMemory
        }
    }

    deinit {
        io?.stop()
        slots.deinitialize(count: Self.slotCount)
        slots.deallocate()
    }

    /// Opens the Sonora device called `name` (nil: ALSA `default`, or the null device when
    /// the machine has no card), stereo at 48 kHz. An unknown or unopenable name is
    /// `invalidValue` (alcOpenDevice's NULL), with the reason in `ALDevice.lastError`.
    public static func playback(_ name: String? = nil) throws(ALError) -> ALDevice {
        let configuration = AudioDeviceConfiguration(sampleRate: 48000, inputChannels: 0, outputChannels: 2)
        let hardware: any AudioDevice
        do {
            hardware = try AudioDevices.open(named: name ?? "default", configuration: configuration, fallback: name == nil ? .null : .none)
        } catch {
            ALDevice.noteOpenFailure("ALDevice.playback(\(name ?? "default")): \(error.message)")
            throw .invalidValue
        }
        let device = try ALDevice(kind: .playback(name ?? "default"), frequency: hardware.format.sampleRate, channels: 2)
        device.hardware = hardware
        return device
    }

    /// A loopback device mixing `channels` (1, 2, 4 or 6) at `frequency` Hz, rendered by
    /// `render(into:frames:)`. Other channel counts or a rate outside 8000…192000 are `invalidValue`.
    public static func loopback(frequency: Int, channels: Int) throws(ALError) -> ALDevice {
        guard [1, 2, 4, 6].contains(channels) else {
            noteOpenFailure("ALDevice.loopback: \(channels) channels; loopback devices mix 1, 2, 4 or 6")
            throw .invalidValue
        }
        guard (8000...192_000).contains(frequency) else {
            noteOpenFailure("ALDevice.loopback: \(frequency) Hz is outside 8000…192000")
            throw .invalidValue
        }
        return try ALDevice(kind: .loopback, frequency: frequency, channels: channels)
    }

    /// Why the last `playback`/`loopback` call or context creation failed (alcGetError has no
    /// context to keep it in).
    public static var lastError: String? { openFailure.withLock { $0 } }
    private static let openFailure = ControlLock<String?>(nil)
    static func noteOpenFailure(_ text: String) { openFailure.withLock { $0 = text } }

    public var isLoopback: Bool { kind == .loopback }

    /// Destroys every context and stops the device (alcCloseDevice). Further use is invalid.
    public func close() {
        let all = locked { contexts }
        for context in all { context.destroy() }
        locked {
            closed = true
            io?.stop()
            io = nil
            hardware = nil
        }
    }

    // MARK: Loopback rendering

    /// Renders `frames` frames of every current, unsuspended context, interleaved
    /// (`channels` samples a frame), on the caller's thread (alcRenderSamplesSOFT). Only for
    /// loopback devices; on a playback device it writes silence.
    public func render(into interleaved: UnsafeMutablePointer<Float>, frames: Int) {
        guard isLoopback else {
            interleaved.update(repeating: 0, count: frames * channels)
            return
        }
        // The render runs on the caller's thread, outside realtime: deferred parameters go now,
        // as many as the 3D mixer's command queue takes per render; while more wait, the mix
        // runs in short slices so each slice takes the next share.
        let live = locked { contexts }
        for context in live { context.flushBeforeLoopbackRender() }
        var done = 0
        while done < frames {
            let allSent = locked { live.reduce(true) { $1.renderer.sendPending() && $0 } }
            let count = min(allSent ? Self.maximumFrames : Self.catchUpFrames, frames - done)
            let list = scratch.list(frameCount: count)
            mix(into: list, frameCount: count)
            locked { for context in live { context.renderer.unitTookCommands() } }
            let out = interleaved + done * channels
            Interleaving.interleave(channels: channels, frames: count, from: { UnsafePointer(list.samples($0)) }, into: out)
            done += count
        }
    }

    // MARK: Control side

    func locked<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    /// Adds a context (under the lock): fixes the mixing rate at the first, starts a playback
    /// device's I/O unit. Returns the render slot, or nil when all are taken.
    func attach(_ context: ALContext, frequency requested: Int?) throws(ALError) {
        guard !closed else { throw .invalidOperation }
        if contexts.isEmpty, let requested, case .playback = kind { frequency = requested }
        contexts.append(context)
    }

    func detach(_ context: ALContext) {
        contexts.removeAll { $0 === context }
    }

    /// Puts `renderer` in a free render slot; false when all are taken.
    func insert(_ renderer: ALContextRenderer) -> Bool {
        let address = Int(bitPattern: Unmanaged.passUnretained(renderer).toOpaque())
        for index in 0..<Self.slotCount where slots[index].load(ordering: .acquiring) == 0 {
            slots[index].store(address, ordering: .releasing)
            return true
        }
        return false
    }

    /// Takes `renderer` out of the render table and waits until no mix still uses it.
    func remove(_ renderer: ALContextRenderer) {
        let address = Int(bitPattern: Unmanaged.passUnretained(renderer).toOpaque())
        for index in 0..<Self.slotCount where slots[index].load(ordering: .acquiring) == address {
            slots[index].store(0, ordering: .releasing)
        }
        waitForMix()
    }

    /// Returns once a mix that may have started before the call has ended.
    func waitForMix() {
        let seen = epoch.load(ordering: .acquiring)
        guard seen & 1 == 1 else { return }
        while epoch.load(ordering: .acquiring) == seen { sched_yield() }
    }

    /// The playback device's I/O unit once a context started it (the refcount audit counts
    /// on its thread through its render notifications).
    @_spi(Benchmark) public var ioUnit: IOUnit? { locked { io } }

    /// Starts the playback device's I/O unit (first context).
    func startPlaybackIfNeeded() throws(ALError) {
        guard case .playback = kind, io == nil, let hardware else { return }
        let unit = IOUnit()
        do {
            try unit.setDevice(hardware)
            try unit.setStreamFormat(.canonical(sampleRate: Double(frequency), channels: channels), scope: .input, element: IOUnit.outputElement)
            try unit.setMaximumFramesPerSlice(Self.maximumFrames)
            try unit.setRenderCallback(
                RenderCallback(function: Self.ioCallback, context: Unmanaged.passUnretained(self).toOpaque()), input: IOUnit.outputElement)
            try unit.initialize()
            try unit.start()
        } catch {
            throw .outOfMemory
        }
        io = unit
    }

    // MARK: Render side

    /// Mixes every slot's context into `output` (realtime on a playback device).
    func mix(into output: AudioBufferList, frameCount: Int) {
        epoch.add(1, ordering: .acquiringAndReleasing)
        output.clear()
        for index in 0..<Self.slotCount {
            let address = slots[index].load(ordering: .acquiring)
            guard address != 0, let pointer = UnsafeMutableRawPointer(bitPattern: address) else { continue }
            Unmanaged<ALContextRenderer>.fromOpaque(pointer)._withUnsafeGuaranteedRef {
                $0.render(adding: output, frameCount: frameCount)
            }
        }
        epoch.add(1, ordering: .acquiringAndReleasing)
    }

    /// The I/O unit's input callback: the device's mix.
    private static let ioCallback: RenderCallback.Function = { context, request in
        let request = request.assumingMemoryBound(to: RenderRequest.self)
        Unmanaged<ALDevice>.fromOpaque(context.unsafelyUnwrapped)._withUnsafeGuaranteedRef {
            $0.mix(into: request.pointee.buffers, frameCount: request.pointee.frameCount)
        }
        return 0
    }
}
