import SonoraCore
import SonoraDSP
import Synchronization

/// What `MultiChannelMixerUnit`'s render reads besides its core, in one block the unit
/// allocates at `initialize()`: the meters, the scratch buffer, the metering flags, and the
/// mixer's steady form (`steadyInputs`, `steadyPullLists`).
///
/// `process` (any cycle) and `renderSteady` (a render plan's steady cycle) run the same
/// per-input and output code below; they differ only in where the parameters come from.
/// `process` reads each input's volume, enable and pan from its ramps (each read moves the
/// ramp on, and a ramp may be running); a steady cycle runs only while no ramp runs and no
/// command arrived since the cycle that filled `steadyInputs`, so there the parameters are
/// the constants that cycle read once — the same values `process` would read.
struct MultiChannelMixerKernel {
    /// Meters: [input][pre/post][channel], then [output][channel].
    var meters: UnsafeMutablePointer<LevelMeter>
    var meterCount: Int
    /// Meter channels of the input scope (the widest input) and of the output.
    var inputMeterChannels: Int
    var outputMeterChannels: Int
    /// One input channel's post-fader signal.
    var gains: UnsafeMutablePointer<Float>
    /// Per input element, how many pre- and post-fader channel meters were measured this
    /// cycle, published after the inputs. Publishing right after each measure put a square
    /// root on the meter's result in the path of every input; after the loop the roots are
    /// independent of each other.
    var measured: UnsafeMutablePointer<MeasuredMeters>
    /// Slot of element 0 of each meter parameter: [pre average, pre peak, post average, post
    /// peak][input channel], then [output average, output peak][output channel].
    var meterSlots: UnsafeMutablePointer<Int>
    /// MeteringMode as the render side reads it: one flag per input element, then the
    /// output's. Written by the control side at any time, hence atomics.
    var meteringFlags: UnsafeMutablePointer<Atomic<Bool>>
    /// What the render side last saw of each flag (render side only), to reset meters on a switch.
    var meteringSeen: UnsafeMutablePointer<Bool>

    // The steady form, filled on the realtime side by `MultiChannelMixerUnit.steadySlot`.
    var core: UnsafeMutablePointer<RealtimeCore>
    var steadyInputs: UnsafeMutablePointer<SteadyInput>
    /// Per input element, the list a steady cycle pulls it into when it is not a plan buffer
    /// (a render callback, or unconnected): the input's own channel count, every input over
    /// the same memory (the unit's `steadyPullBuffer`, the widest input × MaximumFramesPerSlice).
    /// A steady cycle mixes each input right after its pull and reads it no more, so one
    /// region serves them all and stays in L1, where the unit's own input buffers (64 stereo
    /// inputs of 128 frames: 64 KiB) streamed through it.
    var steadyPullLists: UnsafeMutablePointer<AudioBufferList>
    /// The plan buffer the mixer's step writes (nil until the first fill).
    var steadyOutput: AudioBufferList?
    var steadyOutputVolume: Float = 1

    struct MeasuredMeters {
        var pre: Int32 = 0
        var post: Int32 = 0
    }

    /// One input element in a steady cycle: where its samples are, and its parameters.
    struct SteadyInput {
        /// Pulled into `list` each cycle unless `direct` (a render callback, or nothing: silence).
        var source: InputSource = .none
        /// A render plan's buffer the input is bound to (`direct`), or its list over the shared
        /// pull buffer (`steadyPullLists`).
        var list: AudioBufferList
        var direct = false
        var enabled = true
        var volume: Float = 1
        var sides = Sides(left: 1, right: 1)
    }

    /// What an input channel's post-fader signal is summed into the output with: a mono
    /// input into stereo, the equal-power pan law's two gains; a stereo input into stereo,
    /// balance (panning one way turns the other side down); otherwise unused (gain 1).
    struct Sides {
        var left: Float
        var right: Float

        @inline(__always)
        init(left: Float, right: Float) {
            self.left = left
            self.right = right
        }

        @inline(__always)
        init(pan: Float, inputChannels: Int, outputChannels: Int) {
            if inputChannels == 1 && outputChannels == 2 {
                (left, right) = PanLaw.equalPower.gains(pan: pan)
            } else {
                left = min(1, 1 - pan)
                right = min(1, 1 + pan)
            }
        }
    }

    @inline(__always)
    static func publish(_ value: Float, slot: Int, _ published: UnsafeMutablePointer<Atomic<UInt32>>) {
        published[slot].store(value.bitPattern, ordering: .relaxed)
    }

    /// Whether element `index` (the output after the inputs) meters this cycle. On a switch
    /// its meters restart from silence, and publish silence while off rather than freeze.
    @inline(__always)
    func meteringOn(_ index: Int, meters: UnsafeMutablePointer<LevelMeter>, count: Int, silence: () -> Void) -> Bool {
        let on = meteringFlags[index].load(ordering: .relaxed)
        if on != meteringSeen[index] {
            meteringSeen[index] = on
            for meter in 0..<count { meters[meter].reset() }
            if !on { silence() }
        }
        return on
    }

    /// Input `element`'s meters, and its post-fader signal summed into `output` (cleared
    /// before the first input). `volumes`: one volume per frame (a ramp), else `volume`.
    @inline(__always)
    func mix(
        _ element: Int, _ input: AudioBufferList, enabled: Bool, volume: Float, volumes: UnsafePointer<Float>?,
        sides: Sides, frames: Int, into output: AudioBufferList, _ published: UnsafeMutablePointer<Atomic<UInt32>>
    ) {
        let metered = inputMeterChannels
        let channels = min(input.channelCount, metered)
        let preMeters = meters + element * 2 * metered
        let postMeters = preMeters + metered
        let table = meterSlots
        let metering = meteringOn(element, meters: preMeters, count: 2 * metered) {
            for kind in 0..<4 {
                for channel in 0..<channels { Self.publish(0, slot: table[kind * metered + channel] + element, published) }
            }
        }
        measured[element] = MeasuredMeters()
        if metering {
            for channel in 0..<channels { preMeters[channel].measure(input.samples(channel), count: frames) }
            measured[element] = MeasuredMeters(pre: Int32(channels), post: enabled ? Int32(channels) : 0)
        }
        guard enabled else { return }
        let outputChannels = output.channelCount
        for inputChannel in 0..<input.channelCount {
            let source = input.samples(inputChannel)
            // Post-fader signal of this channel, into the scratch buffer.
            if let volumes {
                for frame in 0..<frames { gains[frame] = source[frame] * volumes[frame] }
            } else {
                Mixing.copy(source, to: gains, count: frames, gain: volume)
            }
            if metering && inputChannel < metered { postMeters[inputChannel].measure(gains, count: frames) }
            if input.channelCount == 1 && outputChannels == 2 {
                Mixing.add(gains, into: output.samples(0), count: frames, gain: sides.left)
                Mixing.add(gains, into: output.samples(1), count: frames, gain: sides.right)
            } else if input.channelCount == 2 && outputChannels == 2 {
                Mixing.add(gains, into: output.samples(inputChannel), count: frames, gain: inputChannel == 0 ? sides.left : sides.right)
            } else {
                Mixing.add(gains, into: output.samples(inputChannel % outputChannels), count: frames, gain: 1)
            }
        }
    }

    /// Publishes what `mix` measured this cycle, for every input, row by row: one meter
    /// parameter's slots are consecutive across elements, so the slot table is read once a
    /// row (8 reads a cycle for stereo) rather than once a meter (8 per input), and the stores
    /// of a row are consecutive.
    @inline(__always)
    func publishInputMeters(inputCount: Int, _ published: UnsafeMutablePointer<Atomic<UInt32>>) {
        let metered = inputMeterChannels
        for channel in 0..<metered {
            let preAverage = meterSlots[channel], prePeak = meterSlots[metered &+ channel]
            let postAverage = meterSlots[2 &* metered &+ channel], postPeak = meterSlots[3 &* metered &+ channel]
            for element in 0..<inputCount {
                let counts = measured[element]
                guard channel < Int(counts.pre) else { continue }
                let preMeter = meters + (element &* 2 &* metered &+ channel)
                Self.publish(Float(preMeter.pointee.meanSquare), slot: preAverage &+ element, published)
                Self.publish(Float(preMeter.pointee.peak), slot: prePeak &+ element, published)
                guard channel < Int(counts.post) else { continue }
                let postMeter = preMeter + metered
                Self.publish(Float(postMeter.pointee.meanSquare), slot: postAverage &+ element, published)
                Self.publish(Float(postMeter.pointee.peak), slot: postPeak &+ element, published)
            }
        }
    }

    /// The output volume (`volumes`: per frame, a ramp; else `volume`), then the output meters.
    @inline(__always)
    func finish(
        _ output: AudioBufferList, frames: Int, inputCount: Int, volume: Float, volumes: UnsafePointer<Float>?,
        _ published: UnsafeMutablePointer<Atomic<UInt32>>
    ) {
        let outputChannels = output.channelCount
        if let volumes {
            for channel in 0..<outputChannels {
                let samples = output.samples(channel)
                for frame in 0..<frames { samples[frame] *= volumes[frame] }
            }
        } else if volume != 1 {
            for channel in 0..<outputChannels { Mixing.scale(output.samples(channel), count: frames, by: volume) }
        }
        let outputMetered = min(outputChannels, outputMeterChannels)
        let outputMeters = meters + meterCount - outputMeterChannels
        let outputSlots = meterSlots + 4 * inputMeterChannels
        let outputMeterChannels = outputMeterChannels
        let outputMetering = meteringOn(inputCount, meters: outputMeters, count: outputMeterChannels) {
            for channel in 0..<outputMetered {
                Self.publish(0, slot: outputSlots[channel], published)
                Self.publish(0, slot: outputSlots[outputMeterChannels + channel], published)
            }
        }
        if outputMetering {
            for channel in 0..<outputMetered {
                outputMeters[channel].measure(output.samples(channel), count: frames)
                Self.publish(Float(outputMeters[channel].meanSquare), slot: outputSlots[channel], published)
                Self.publish(Float(outputMeters[channel].peak), slot: outputSlots[outputMeterChannels + channel], published)
            }
        }
    }
}
