extension PipelineRuntime {
    /// The `/metrics` endpoint the config asks for, started (nil without a `metrics:` section).
    func startMetricsEndpoint(_ configuration: PipelineConfiguration, controller: PipelineController) throws(Failure) -> MetricsHTTPServer? {
        guard let metrics = configuration.metrics else { return nil }
        let server: MetricsHTTPServer
        do {
            server = try MetricsHTTPServer(host: metrics.host, port: metrics.port, logger: logger) {
                controller.serialized { controller.metricsText() }
            }
        } catch {
            let place = metrics.location.map { "\($0.file):\($0.line):\($0.column): " } ?? ""
            throw .service("\(place)metrics.listen \(metrics.listen): \(error)")
        }
        server.start()
        logger.info("metrics at \(server.url)")
        return server
    }
}
