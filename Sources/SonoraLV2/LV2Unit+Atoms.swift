import CLilv
import SonoraCore
import SonoraUnits

/// Atom ports on the realtime side: input sequences emptied and filled with this slice's
/// patch messages and MIDI, output sequences given their capacity, and what plugins write
/// copied into the read-back ring. No allocation.
extension LV2Unit {
    /// Empties input sequences (then adds this slice's MIDI) and gives output sequences their capacity.
    func prepareAtoms(_ state: UnsafeMutablePointer<LV2RunState>, _ context: RenderContext) {
        if context.frameOffset == 0 {
            // A new cycle: keep what the last cycle did not reach (offsets moved to this
            // cycle's frames), then take what is queued for this one.
            let previousEnd = state.pointee.midiCycleEnd
            var count = 0
            for index in 0..<state.pointee.pendingMIDICount {
                var event = state.pointee.pendingMIDI[index]
                guard Int(event.frameOffset) >= previousEnd else { continue }
                event.frameOffset -= Int32(previousEnd)
                state.pointee.pendingMIDI[count] = event
                count += 1
            }
            while count < LV2RunState.midiCapacity,
                let event = state.pointee.midi._withUnsafeGuaranteedRef({ $0.pop() })
            {
                state.pointee.pendingMIDI[count] = event
                count += 1
            }
            state.pointee.pendingMIDICount = count
        }
        let sliceEnd = context.frameOffset + context.frameCount
        state.pointee.midiCycleEnd = sliceEnd
        let positionCount = state.pointee.positionPort >= 0 ? collectPositions(state, context) : 0
        for index in 0..<state.pointee.atomCount {
            let atom = state.pointee.atoms[index]
            let sequence = atom.buffer.assumingMemoryBound(to: LV2_Atom_Sequence.self)
            if atom.isInput {
                sequence.pointee.atom.type = state.pointee.sequenceURID
                sequence.pointee.atom.size = UInt32(MemoryLayout<LV2_Atom_Sequence_Body>.size)
                sequence.pointee.body.unit = 0
                sequence.pointee.body.pad = 0
                if index == Int(state.pointee.patchPort) && context.frameOffset == 0 {
                    appendPatches(state, to: sequence, capacity: atom.capacity)
                }
                // time:Position and MIDI on one sequence: merged in frame order.
                let positions = index == Int(state.pointee.positionPort) ? positionCount : 0
                var positionIndex = 0
                if atom.takesMIDI {
                    for eventIndex in 0..<state.pointee.pendingMIDICount {
                        let event = state.pointee.pendingMIDI[eventIndex]
                        let offset = Int(event.frameOffset)
                        guard offset >= context.frameOffset && offset < sliceEnd else { continue }
                        appendPositions(state, positions, &positionIndex, through: offset - context.frameOffset, to: sequence, capacity: atom.capacity)
                        appendMIDI(event, time: offset - context.frameOffset, to: sequence, capacity: atom.capacity, urid: state.pointee.midiURID)
                    }
                }
                appendPositions(state, positions, &positionIndex, through: Int.max, to: sequence, capacity: atom.capacity)
            } else {
                sequence.pointee.atom.type = state.pointee.chunkURID
                sequence.pointee.atom.size = UInt32(atom.capacity - MemoryLayout<LV2_Atom>.size)
            }
        }
    }

    /// Moves queued patch messages (whole atoms the control side forged) into the sequence at frame 0.
    func appendPatches(_ state: UnsafeMutablePointer<LV2RunState>, to sequence: UnsafeMutablePointer<LV2_Atom_Sequence>, capacity: Int) {
        while true {
            let used = MemoryLayout<LV2_Atom>.size + Int(sequence.pointee.atom.size)
            let room = capacity - used - 8
            guard room > 8 else { return }
            let event = UnsafeMutableRawPointer(sequence) + used
            let taken = state.pointee.patches._withUnsafeGuaranteedRef { $0.pop(into: event + 8, capacity: room) }
            guard let taken else { return }
            guard taken.count <= room else { continue }  // too large for this buffer: dropped
            event.storeBytes(of: Int64(0), as: Int64.self)
            sequence.pointee.atom.size += UInt32(8 + (taken.count + 7) / 8 * 8)
        }
    }

    func appendMIDI(
        _ event: LV2MIDIEvent, time: Int, to sequence: UnsafeMutablePointer<LV2_Atom_Sequence>, capacity: Int, urid: UInt32
    ) {
        let header = MemoryLayout<LV2_Atom>.size
        let used = header + Int(sequence.pointee.atom.size)
        let eventSize = MemoryLayout<LV2_Atom_Event>.size + 8  // time + atom header, then ≤ 3 bytes padded to 8
        guard used + eventSize <= capacity else { return }
        let raw = UnsafeMutableRawPointer(sequence) + used
        raw.storeBytes(of: Int64(time), as: Int64.self)
        raw.storeBytes(of: UInt32(event.length), toByteOffset: 8, as: UInt32.self)
        raw.storeBytes(of: urid, toByteOffset: 12, as: UInt32.self)
        raw.storeBytes(of: event.bytes.0, toByteOffset: 16, as: UInt8.self)
        raw.storeBytes(of: event.bytes.1, toByteOffset: 17, as: UInt8.self)
        raw.storeBytes(of: event.bytes.2, toByteOffset: 18, as: UInt8.self)
        sequence.pointee.atom.size += UInt32(eventSize)
    }

    /// Copies every non-empty output sequence into the read-back ring (dropped when full).
    func readAtomOutputs(_ state: UnsafeMutablePointer<LV2RunState>, _ context: RenderContext) {
        let bodySize = MemoryLayout<LV2_Atom_Sequence_Body>.size
        for index in 0..<state.pointee.atomCount {
            let atom = state.pointee.atoms[index]
            guard !atom.isInput else { continue }
            let sequence = atom.buffer.assumingMemoryBound(to: LV2_Atom_Sequence.self)
            let size = Int(sequence.pointee.atom.size)
            guard sequence.pointee.atom.type == state.pointee.sequenceURID, size > bodySize,
                size <= atom.capacity - MemoryLayout<LV2_Atom>.size
            else { continue }
            let events = UnsafeRawPointer(atom.buffer) + MemoryLayout<LV2_Atom>.size + bodySize
            _ = state.pointee.atomOutputs._withUnsafeGuaranteedRef {
                $0.push(tag: atom.port, events, count: size - bodySize)
            }
        }
    }
}
