import Foundation
import SonoraCore
import SonoraUnits

/// The `transport` command: the graph transport read and changed from the control side. A change
/// travels to the I/O thread through the transport's lock-free queue and lands at the next cycle
/// boundary, or at the exact graph sample time `at`; the answer comes once it has landed (a change
/// due later is answered at once, with the transport as it stands).
extension PipelineController {
    func performTransport(_ request: TransportRequest) throws -> ControlResponse {
        guard let transport = pipeline.graph.transport else {
            throw ControlFailure(.failed, "this pipeline's graph has no transport")
        }
        let before = transport.sampleTime
        var settings = pipeline.configuration.transport ?? PipelineConfiguration.TransportSettings()
        do throws(AudioError) {
            switch request.action {
            case .status: break
            case .play:
                try transport.play(at: request.at)
                settings.isPlaying = true
            case .stop:
                try transport.stop(at: request.at)
                settings.isPlaying = false
            case .locate: try transport.locate(toBeat: request.beat ?? 0, at: request.at)
            case .tempo:
                try transport.setTempo(request.tempo ?? settings.tempo, at: request.at)
                settings.tempo = request.tempo ?? settings.tempo
            case .meter:
                let signature = try TimeSignature(parsing: request.meter ?? "")
                try transport.setTimeSignature(signature, at: request.at)
                settings.timeSignature = signature
            }
        } catch {
            throw ControlFailure(.failed, field: request.action.valueField, "transport \(request.action.rawValue): \(error.message)")
        }
        if request.action != .status {
            // `save` writes the transport as it was last set.
            pipeline.configuration.transport = settings
            if request.at == nil && pipeline.graph.isRunning { waitForCycle(of: transport, after: before) }
        }
        return .transport(Self.reading(transport))
    }

    /// Waits (at most 250 ms) until the I/O thread has ended two cycles after `sampleTime` was
    /// read: the first may have begun — and taken its changes — before this change was queued
    /// (its answer then showed the transport before a locate); the second began after it.
    private func waitForCycle(of transport: Transport, after sampleTime: Int64) {
        var last = sampleTime
        var cyclesEnded = 0
        for _ in 0..<250 {
            let now = transport.sampleTime
            if now != last {
                cyclesEnded += 1
                last = now
                if cyclesEnded == 2 { return }
            }
            usleep(1000)
        }
    }

    static func reading(_ transport: Transport) -> ControlResponse.TransportReading {
        let position = transport.position
        return ControlResponse.TransportReading(
            playing: position.isPlaying, tempo: position.tempo, meter: position.timeSignature.description, beat: position.beat,
            bar: position.bar, barBeat: position.barBeat, frame: position.frame, sampleTime: transport.sampleTime)
    }
}
