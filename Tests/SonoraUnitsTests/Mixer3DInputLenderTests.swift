import SonoraCore
import Testing
@testable import SonoraUnits

/// `Mixer3DInputLender`: a mono input that lends its samples in place mixes exactly as the
/// same input pulled through its render callback; the lender is asked only while that
/// callback feeds the input; `ResolvedInputParameter` sets as the id does.
@Suite("3D mixer: input lenders and resolved parameters")
struct Mixer3DInputLenderTests {
    /// A mono player over a fixed table of samples: the callback copies the next frames, the
    /// lender hands out a pointer to them, except where `lends` says no (then nil).
    struct TablePlayer {
        let table: UnsafeMutablePointer<Float>
        let count: Int
        var position = 0
        var lends: (Int) -> Bool
        var lent = 0
        var pulled = 0

        static let callback: RenderCallback.Function = { context, request in
            let player = context.unsafelyUnwrapped.assumingMemoryBound(to: TablePlayer.self)
            let request = request.assumingMemoryBound(to: RenderRequest.self)
            let frames = request.pointee.frameCount
            let out = request.pointee.buffers.samples(0)
            for frame in 0..<frames { out[frame] = player.pointee.table[(player.pointee.position + frame) % player.pointee.count] }
            player.pointee.position += frames
            player.pointee.pulled += 1
            return 0
        }

        static let lender: Mixer3DInputLender.Function = { context, frames in
            let player = context.unsafelyUnwrapped.assumingMemoryBound(to: TablePlayer.self)
            let start = player.pointee.position % player.pointee.count
            guard player.pointee.lends(player.pointee.lent + player.pointee.pulled), start + frames <= player.pointee.count else { return nil }
            player.pointee.position += frames
            player.pointee.lent += 1
            return UnsafePointer(player.pointee.table + start)
        }
    }

    /// Renders 12 slices of 256 frames of one mono input (a noise table, the azimuth and gain
    /// moving each slice, `occluded`: through the in-place occlusion filter); with `lender`
    /// the input lends every slice `lends` allows. Returns the output and the player's counts.
    func render(lender: Bool, occluded: Bool, lends: @escaping (Int) -> Bool) throws -> (out: [[Float]], lent: Int, pulled: Int) {
        let count = 48_000
        let table = UnsafeMutablePointer<Float>.allocate(capacity: count)
        defer { table.deallocate() }
        var seed: UInt32 = 7
        for index in 0..<count {
            seed = seed &* 1_664_525 &+ 1_013_904_223
            table[index] = Float(Int32(bitPattern: seed)) / Float(Int32.max) * 0.5
        }
        let player = UnsafeMutablePointer<TablePlayer>.allocate(capacity: 1)
        player.initialize(to: TablePlayer(table: table, count: count, lends: lends))
        defer { player.deinitialize(count: 1); player.deallocate() }
        let unit = try makeMixer3D()
        try unit.setRenderCallback(RenderCallback(function: TablePlayer.callback, context: UnsafeMutableRawPointer(player)), input: 0)
        if lender {
            try unit.setInputLender(Mixer3DInputLender(function: TablePlayer.lender, context: UnsafeMutableRawPointer(player)), element: 0)
        }
        typealias P = Mixer3DUnit.Parameter
        if occluded { try unit.setParameter(P.occlusionAttenuation, scope: .input, element: 0, to: -20) }
        try unit.initialize()
        defer { unit.uninitialize() }
        var out: [[Float]] = [[], []]
        for slice in 0..<12 {
            try unit.setParameter(P.azimuth, scope: .input, element: 0, to: Float(slice * 25 - 150))
            try unit.setParameter(P.gain, scope: .input, element: 0, to: Float(-slice))
            let block = try renderMixer3D(unit, cycles: 1, frames: 256, channels: 2, startingAt: slice)
            out[0] += block[0]
            out[1] += block[1]
        }
        return (out, player.pointee.lent, player.pointee.pulled)
    }

    @Test(arguments: [false, true])
    func lentSamplesMixAsPulledOnes(occluded: Bool) throws {
        let pulled = try render(lender: false, occluded: occluded) { _ in true }
        #expect(pulled.lent == 0 && pulled.pulled == 12)
        // Every third slice refused: both ways within one run, the voice's state carried across.
        let mixed = try render(lender: true, occluded: occluded) { $0 % 3 != 2 }
        #expect(mixed.lent == 8 && mixed.pulled == 4)
        #expect(mixed.out == pulled.out, "lent and pulled samples mix differently")
        #expect(pulled.out[0].contains { $0 != 0 } && pulled.out[1].contains { $0 != 0 })
    }

    /// Another callback on the input: the lender (which stands for the first) is not asked.
    @Test func aReplacedCallbackIsPulled() throws {
        let unit = try makeMixer3D()
        let first = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        first.initialize(to: 0)
        defer { first.deallocate() }
        let counting: Mixer3DInputLender.Function = { context, _ in
            context.unsafelyUnwrapped.assumingMemoryBound(to: Int.self).pointee += 1
            return nil
        }
        try unit.setInputLender(Mixer3DInputLender(function: counting, context: UnsafeMutableRawPointer(first)), element: 0)
        let tone = Mixer3DToneSource(frequency: 1000)
        try unit.setRenderCallback(RenderCallback(tone), input: 0)
        try unit.initialize()
        defer { unit.uninitialize() }
        _ = try renderMixer3D(unit, cycles: 3, frames: 256, channels: 2)
        #expect(first.pointee == 0, "a lender was asked for an input another callback feeds")
        #expect(tone.framesServed == 768)
    }

    @Test func lendersAreSetUninitializedOnMonoInputs() throws {
        let unit = try makeMixer3D(inputs: 2)
        let lender = Mixer3DInputLender(function: { _, _ in nil }, context: nil)
        #expect(throws: AudioError.self) { try unit.setInputLender(lender, element: 2) }
        try unit.setInputLender(lender, element: 1)
        try unit.initialize()
        defer { unit.uninitialize() }
        #expect(throws: AudioError.self) { try unit.setInputLender(nil, element: 1) }
    }

    @Test func resolvedParametersSetAsTheirIDsDo() throws {
        let unit = try makeMixer3D(inputs: 3)
        typealias P = Mixer3DUnit.Parameter
        let azimuth = try unit.resolveInputParameter(P.azimuth)
        let gain = try unit.resolveInputParameter(P.gain)
        try unit.setInputParameter(azimuth, element: 2, to: -30)
        #expect(try unit.parameter(P.azimuth, scope: .input, element: 2) == -30)
        #expect(try unit.parameter(P.azimuth, scope: .input, element: 0) == 0)
        try unit.setInputParameter(gain, element: 1, to: 99)
        #expect(try unit.parameter(P.gain, scope: .input, element: 1) == 20)
        try unit.setInputParameter(gain, element: 1, to: .nan)
        #expect(try unit.parameter(P.gain, scope: .input, element: 1) == 0)
        #expect(throws: AudioError.self) { try unit.setInputParameter(azimuth, element: 3, to: 0) }
        #expect(throws: AudioError.self) { try unit.resolveInputParameter(P.globalReverbGain) }
    }
}
