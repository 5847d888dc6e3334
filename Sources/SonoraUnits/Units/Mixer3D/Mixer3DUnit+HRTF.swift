import SonoraCore
import SonoraDSP
import SonoraFile

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
    /// Per input element, one renderer per channel (empty while uninitialized).
    var renderers: [[BinauralRenderer]] = []
}

extension Mixer3DUnit {
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
        if let kernel = hrtf.kernel, hrtf.path == path, hrtf.sampleRate == rate, hrtf.blockSize == block { return kernel }
        let set = try SOFAFile.load(path: path, sampleRate: rate)
        let kernel = HRTFKernel(set: set, blockSize: block)
        hrtf.kernel = kernel
        hrtf.path = path
        hrtf.sampleRate = rate
        hrtf.blockSize = block
        return kernel
    }

    /// Gives input `element`'s renderers the current kernel (control side; taken at their next render).
    func attachHRTFKernel(to element: Int) {
        guard element < hrtf.renderers.count else { return }
        for renderer in hrtf.renderers[element] { renderer.setKernel(hrtf.kernel) }
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
