import SonoraHAL

extension PipelineController {
    /// Everything `metrics` reports, read now (call serialized, as every request is).
    public func metricsSnapshot() -> PipelineMetrics {
        let device = device
        let streams = clientStreams()
        return PipelineMetrics(
            driver: device.driver, deviceName: Self.routeName(of: device), running: device.isRunning,
            statistics: device.statistics, lateness: device.wakeUpLateness,
            sampleRate: device.format.sampleRate, roundTripFrames: device.format.roundTripFrames,
            meters: meters(), reloadsAccepted: reloadCounts.acceptedCount, reloadsRefused: reloadCounts.refusedCount,
            clients: sessionServer.map { $0.server.clients.count },
            clientStreams: streams.map {
                .init(stream: $0.stream, pid: $0.pid, program: $0.program, direction: $0.direction,
                      underruns: $0.underruns, overruns: $0.overruns, faulted: $0.faulted)
            },
            recorderFailures: pipeline.recorderFailures.count)
    }

    /// The `metrics` answer: Prometheus' text exposition.
    public func metricsText() -> String { metricsSnapshot().exposition() }
}
