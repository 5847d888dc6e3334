import SonoraCore
import SonoraDSP

extension Mixer3DUnit {
    /// The parameter slots of element 0 of each bus's level, high shelf and low shelf.
    func auxiliarySlotTable() throws(AudioError) -> [Int] {
        guard !inputs.isEmpty else { return [] }
        typealias P = Parameter
        var table: [Int] = []
        for id in [P.auxiliarySendLevel, P.auxiliarySendHighFrequencyGain, P.auxiliarySendLowFrequencyGain] {
            for bus in 0..<Self.maximumAuxiliaryBuses {
                table.append(try parameterSlot(ParameterAddress(id(bus), scope: .input, element: 0)))
            }
        }
        return table
    }
}

extension Mixer3DRenderer {
    /// Adds the voice's channels (summed at equal power) into each auxiliary bus at the send's
    /// level (ramped across the slice), through the send's shelves.
    func addAuxiliarySends(
        _ voice: UnsafeMutablePointer<Mixer3DVoice>, element: Int, channels: Int, frames: Int, context: RenderContext
    ) {
        let busCount = Mixer3DUnit.maximumAuxiliaryBuses
        var summed = false
        for bus in 0..<auxiliaryBusCount {
            let levelDB = context.parameter(auxiliarySlots[bus] + element)
            let target = levelDB <= -120 ? 0 : Self.gain(decibels: levelDB)
            let current = voice.pointee.auxiliaryGains + bus
            // A send that is off costs one parameter read.
            guard target > 0 || current.pointee > 0 else { continue }
            let highDB = context.parameter(auxiliarySlots[busCount + bus] + element)
            let lowDB = context.parameter(auxiliarySlots[2 * busCount + bus] + element)
            if !summed {
                if channels == 1 {
                    sendSum.update(from: source[0], count: frames)
                } else {
                    Mixing.copy(source[0], to: sendSum, count: frames, gain: 0.70710678)
                    Mixing.add(source[1], into: sendSum, count: frames, gain: 0.70710678)
                }
                summed = true
            }
            let shelves = voice.pointee.shelves + 4 + 2 * bus
            let decibels = voice.pointee.shelfDecibels + 2 + 2 * bus
            designShelf(shelves, decibels: decibels, high: true, to: highDB)
            designShelf(shelves + 1, decibels: decibels + 1, high: false, to: lowDB)
            var signal = UnsafePointer(sendSum)
            if decibels[0] < 0 || decibels[1] < 0 {
                sendFiltered.update(from: sendSum, count: frames)
                if decibels[0] < 0 { shelves[0].process(sendFiltered, count: frames) }
                if decibels[1] < 0 { shelves[1].process(sendFiltered, count: frames) }
                signal = UnsafePointer(sendFiltered)
            }
            let start = voice.pointee.hasState ? current.pointee : target
            current.pointee = target
            let bufferStart = auxiliaryBuses + bus * maximumFrames
            auxiliaryWritten[bus] = max(auxiliaryWritten[bus], frames)
            if start == target {
                Mixing.add(signal, into: bufferStart, count: frames, gain: target)
            } else {
                let step = (target - start) / Float(frames)
                for frame in 0..<frames { bufferStart[frame] += signal[frame] * (start + step * Float(frame + 1)) }
            }
        }
    }

    /// The direct sound's EFX shelves, on the input's channels in place.
    func applyDirectShelves(_ voice: UnsafeMutablePointer<Mixer3DVoice>, highDB: Float, lowDB: Float, channels: Int, frames: Int) {
        let decibels = voice.pointee.shelfDecibels
        let shelves = voice.pointee.shelves
        if highDB != decibels[0] {
            if decibels[0] == 0 { shelves[0].reset(); shelves[1].reset() }
            decibels[0] = highDB
            let coefficients = Mixer3DUnit.efxShelf(high: true, decibels: highDB, sampleRate: sampleRate)
            shelves[0].coefficients = coefficients
            shelves[1].coefficients = coefficients
        }
        if lowDB != decibels[1] {
            if decibels[1] == 0 { shelves[2].reset(); shelves[3].reset() }
            decibels[1] = lowDB
            let coefficients = Mixer3DUnit.efxShelf(high: false, decibels: lowDB, sampleRate: sampleRate)
            shelves[2].coefficients = coefficients
            shelves[3].coefficients = coefficients
        }
        if decibels[0] < 0 || decibels[1] < 0 { makeSourceWritable(channels: channels, frames: frames) }
        if decibels[0] < 0 { for channel in 0..<channels { shelves[channel].process(source[channel], count: frames) } }
        if decibels[1] < 0 { for channel in 0..<channels { shelves[2 + channel].process(source[channel], count: frames) } }
    }

    /// Redesigns one shelf when its gain changes (from a clean state when it starts filtering).
    private func designShelf(_ shelf: UnsafeMutablePointer<Biquad>, decibels: UnsafeMutablePointer<Float>, high: Bool, to value: Float) {
        guard value != decibels.pointee else { return }
        if decibels.pointee == 0 { shelf.pointee.reset() }
        decibels.pointee = value
        shelf.pointee.coefficients = Mixer3DUnit.efxShelf(high: high, decibels: value, sampleRate: sampleRate)
    }
}
