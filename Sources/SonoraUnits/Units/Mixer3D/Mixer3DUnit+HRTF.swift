import SonoraCore
import SonoraDSP
import SonoraFile
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The 3D mixer's HRTF resources, on the control side: the kernel made from the selected SOFA
/// file (at the output's rate, for the render slice), and one `BinauralRenderer` per input
/// channel while initialized. Files are read and kernels made here, never on the render thread;
/// a renderer picks a new kernel up at its next render and keeps it alive while it uses it.
struct Mixer3DHRTF {
    var kernel: HRTFKernel?
    /// What `kernel` was made from.
    var path: String?
    var sampleRate: Double = 0
    var blockSize = 0
    /// The `compactHRTFTaps` it was made with (0: the file's responses as measured).
    var compactTaps = 0
    /// Per input element, one renderer per channel (empty while uninitialized).
    var renderers: [[BinauralRenderer]] = []
}

extension Mixer3DUnit {
    /// Compact kernels made so far, shared by every 3D mixer in the process.
    static let compactKernels = CompactHRTFKernels()

    /// Convolution block of the HRTF kernel: a power of two near the render slice (32…512).
    static func hrtfBlockSize(_ maximumFrames: Int) -> Int {
        var block = 32
        while block * 2 <= min(maximumFrames, 512) { block *= 2 }
        return block
    }

    /// Whether any input renders through the HRTF (only a stereo output does).
    var usesHRTF: Bool {
        (outputs.first?.format.channelsPerFrame ?? 0) == 2 && inputSettings.contains { $0.algorithm == .hrtf }
    }

    /// The kernel of the SOFA file at `path` for the output's rate, loading it unless it is the
    /// current one. Throws the file's problem (named) without changing anything.
    func preparedHRTFKernel(path: String) throws(AudioError) -> HRTFKernel {
        let rate = outputs.first?.format.sampleRate ?? 48000
        let block = Self.hrtfBlockSize(maximumFramesPerSlice)
        let taps = compactHRTFTaps
        if let kernel = hrtf.kernel, hrtf.path == path, hrtf.sampleRate == rate, hrtf.blockSize == block, hrtf.compactTaps == taps {
            return kernel
        }
        let kernel: HRTFKernel
        if taps > 0 {
            kernel = try Self.compactKernels.kernel(path: path, sampleRate: rate, blockSize: block, taps: taps)
        } else {
            kernel = HRTFKernel(set: try SOFAFile.load(path: path, sampleRate: rate), blockSize: block)
        }
        hrtf.kernel = kernel
        hrtf.path = path
        hrtf.sampleRate = rate
        hrtf.blockSize = block
        hrtf.compactTaps = taps
        return kernel
    }

    /// Gives input `element`'s renderers the current kernel (control side; taken at their next render).
    func attachHRTFKernel(to element: Int) {
        guard element < hrtf.renderers.count else { return }
        for renderer in hrtf.renderers[element] { renderer.setKernel(hrtf.kernel) }
    }

    /// Renders HRTF inputs through compact responses: each of the file's responses made minimum
    /// phase and cut to `taps` samples after its onset delay (`HRTFSet.minimumPhase(taps:)`), as
    /// OpenAL Soft's own sets are (its 1.19 default set has 32 taps). Up to
    /// `HRTFKernel.timeDomainLimit` taps these are convolved directly, several times cheaper
    /// per source than the partitioned convolution of the measured responses; the magnitude
    /// response and the interaural delay stay, the phase within each ear becomes minimum.
    /// 0 (the default) renders the measured responses. Control side; takes effect at once.
    public func setCompactHRTF(taps: Int) throws(AudioError) {
        guard taps >= 0 else { throw AudioError(.invalidPropertyValue, "\(name): compact HRTF taps must be 0 or more, not \(taps)") }
        guard taps != compactHRTFTaps else { return }
        let previous = compactHRTFTaps
        compactHRTFTaps = taps
        guard isInitialized && usesHRTF else { return }
        do {
            _ = try preparedHRTFKernel(path: hrtfFilePath)
        } catch {
            compactHRTFTaps = previous
            throw error
        }
        for element in 0..<inputSettings.count where inputSettings[element].algorithm == .hrtf { attachHRTFKernel(to: element) }
    }

    /// Selects the SOFA file HRTF inputs use: loaded now (so a bad file fails here, naming it and
    /// why) and, while rendering, handed to every HRTF input.
    func setHRTFFile(_ path: String) throws(AudioError) {
        guard !path.isEmpty else { throw AudioError(.invalidPropertyValue, "\(name): the HRTF file path is empty") }
        _ = try preparedHRTFKernel(path: path)
        hrtfFilePath = path
        if isInitialized {
            for element in 0..<inputSettings.count where inputSettings[element].algorithm == .hrtf { attachHRTFKernel(to: element) }
        }
        propertyDidChange(.hrtfFilePath)
    }

    /// An input switching to HRTF while rendering: its renderers get the kernel (loaded first if need be).
    func prepareHRTF(forInput element: Int) throws(AudioError) {
        guard isInitialized, (outputs.first?.format.channelsPerFrame ?? 0) == 2 else { return }
        _ = try preparedHRTFKernel(path: hrtfFilePath)
        attachHRTFKernel(to: element)
    }

    /// At initialize: one renderer per input channel; the kernel loaded if any input needs it.
    func allocateHRTFRenderers() throws(AudioError) {
        if usesHRTF { _ = try preparedHRTFKernel(path: hrtfFilePath) }
        hrtf.renderers = inputs.map { input in
            (0..<Int(input.format.channelsPerFrame)).map { _ in BinauralRenderer(maximumFrames: maximumFramesPerSlice) }
        }
        for element in 0..<inputSettings.count where inputSettings[element].algorithm == .hrtf && usesHRTF {
            attachHRTFKernel(to: element)
        }
    }
}

/// Compact (minimum-phase) kernels by file, rate, block and taps, shared process-wide: making
/// one transforms every response of the set several times (about a second for a full KEMAR
/// set), too slow for each context an OpenAL program creates; kernels are immutable and
/// shared by design. A file changed on disk (size or modification time) is made again.
/// Control side only (a lock; never the render thread).
final class CompactHRTFKernels: @unchecked Sendable {
    private struct Key: Hashable {
        var path: String, sampleRate: Double, blockSize: Int, taps: Int
        var size: Int, modified: Int
    }

    private let lock = Mutex<[Key: HRTFKernel]>([:])

    func kernel(path: String, sampleRate: Double, blockSize: Int, taps: Int) throws(AudioError) -> HRTFKernel {
        var info = stat()
        let found = stat(path, &info) == 0
        let key = Key(
            path: path, sampleRate: sampleRate, blockSize: blockSize, taps: taps, size: found ? Int(info.st_size) : -1,
            modified: found ? Int(info.st_mtim.tv_sec) * 1_000_000_000 + Int(info.st_mtim.tv_nsec) : -1)
        if let kernel = lock.withLock({ $0[key] }) { return kernel }
        let set = try SOFAFile.load(path: path, sampleRate: sampleRate).minimumPhase(taps: taps)
        let kernel = HRTFKernel(set: set, blockSize: blockSize)
        lock.withLock { $0[key] = kernel }
        return kernel
    }
}
