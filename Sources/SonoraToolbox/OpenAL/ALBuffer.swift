import Foundation
import SonoraCore
import SonoraFile

/// An OpenAL buffer: sample data sources play, owned by the device (any of its contexts'
/// sources may use it). Data is copied in (alBufferData) or decoded from any file the file
/// layer reads, and kept as Float32 for the render side.
public final class ALBuffer: @unchecked Sendable {
    let device: ALDevice
    /// The sticky error of the context that made it: where its errors are recorded (held
    /// strongly, not the context weakly: see `ALErrorState`).
    private let errors: ALErrorState
    // Under the device's lock.
    var storage: ALBufferStorage?
    /// Sources using it (as their buffer or in their queue): it cannot change or be deleted then.
    var useCount = 0
    private(set) var isDeleted = false

    init(device: ALDevice, context: ALContext) {
        self.device = device
        errors = context.errors
    }

    /// AL_FREQUENCY (0 before data is set).
    public var frequency: Int { device.locked { storage?.frequency ?? 0 } }
    /// AL_BITS of the data as given (8, 16 or 32; 0 before data is set).
    public var bits: Int { device.locked { storage?.format.bits ?? 0 } }
    /// AL_CHANNELS (1 or 2; 0 before data is set).
    public var channels: Int { device.locked { storage?.channels ?? 0 } }
    /// AL_SIZE: bytes of the data as given.
    public var size: Int { device.locked { storage?.byteSize ?? 0 } }
    /// Sample frames.
    public var frameCount: Int { device.locked { storage?.frames ?? 0 } }

    /// Copies `bytes` of `format` at `frequency` Hz in (alBufferData). `invalidValue` for a
    /// frequency ≤ 0 or a size that is not whole frames; `invalidOperation` while a source
    /// uses the buffer; `invalidName` once deleted.
    public func setData(_ bytes: UnsafeRawBufferPointer, format: ALFormat, frequency: Int) throws(ALError) {
        try device.locked { () throws(ALError) in
            try checkChangeableLocked("setData")
            guard frequency > 0 else { throw record(.invalidValue, "ALBuffer.setData: frequency \(frequency) Hz") }
            guard bytes.count % format.bytesPerFrame == 0 else {
                throw record(.invalidValue, "ALBuffer.setData: \(bytes.count) bytes is not a whole number of \(format) frames (\(format.bytesPerFrame) bytes each)")
            }
            storage = ALBufferStorage.decode(bytes, format: format, frequency: frequency)
        }
    }

    /// Decodes the file at `url` (any format the file layer reads: WAV, AIFF, CAF, FLAC, Ogg,
    /// MP3, M4A …) at its own rate. Mono and stereo files only (OpenAL buffers are one or the
    /// other): anything else, or a file that cannot be read, is `invalidValue` with the reason
    /// in the context's `lastErrorMessage`.
    public func load(contentsOf url: URL) throws(ALError) {
        try device.locked { () throws(ALError) in try checkChangeableLocked("load") }
        let decoded: ALBufferStorage
        do {
            decoded = try Self.decode(path: url.path)
        } catch {
            throw device.locked { record(.invalidValue, "ALBuffer.load: \(error.message)") }
        }
        try device.locked { () throws(ALError) in
            try checkChangeableLocked("load")
            storage = decoded
        }
    }

    private static func decode(path: String) throws(AudioError) -> ALBufferStorage {
        let file = try ExtAudioFile.open(path)
        defer { try? file.close() }
        let fileFormat = file.file.dataFormat
        let channels = Int(fileFormat.channelsPerFrame)
        guard channels == 1 || channels == 2 else {
            throw AudioError(.unsupportedDataFormat, "\(path): \(channels) channels; OpenAL buffers are mono or stereo")
        }
        let rate = fileFormat.sampleRate
        let client = StreamFormat.linearPCM(sampleRate: rate, channels: channels, sample: .float32)
        try file.setClientFormat(client)
        var samples: [Float] = []
        samples.reserveCapacity(max(0, file.frameLength) * channels)
        let block = 8192
        let buffer = try OwnedPCMBufferList(format: client, frameCapacity: block)
        while true {
            let got = try file.read(into: buffer.list(frameCount: block), frameCount: block)
            if got == 0 { break }
            let bytes = buffer.bytes(0)
            samples += UnsafeBufferPointer(start: bytes.baseAddress!.assumingMemoryBound(to: Float.self), count: got * channels)
        }
        let format: ALFormat = channels == 1 ? .monoFloat32 : .stereoFloat32
        return samples.withUnsafeBytes { ALBufferStorage.decode($0, format: format, frequency: Int(rate.rounded())) }
    }

    /// Deletes the buffer (alDeleteBuffers). `invalidOperation` while a source uses it.
    public func delete() throws(ALError) {
        try device.locked { () throws(ALError) in
            try checkChangeableLocked("delete")
            isDeleted = true
            storage = nil
        }
    }

    private func checkChangeableLocked(_ call: String) throws(ALError) {
        if isDeleted { throw record(.invalidName, "ALBuffer.\(call): the buffer is deleted") }
        if useCount > 0 { throw record(.invalidOperation, "ALBuffer.\(call): the buffer is in use by \(useCount) source(s)") }
    }

    func record(_ error: ALError, _ message: String) -> ALError {
        errors.record(error, message)
    }
}

extension ALBuffer {
    /// alBufferData with the format as an OpenAL enum: `invalidEnum` for an unknown format.
    public func setData(_ bytes: UnsafeRawBufferPointer, alFormat value: Int32, frequency: Int) throws(ALError) {
        guard let format = ALFormat(alValue: value) else {
            throw device.locked { record(.invalidEnum, "ALBuffer.setData: 0x\(String(value, radix: 16)) is not a buffer format") }
        }
        try setData(bytes, format: format, frequency: frequency)
    }
}
