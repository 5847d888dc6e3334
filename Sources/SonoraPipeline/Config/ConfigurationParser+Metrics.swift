import Yams

extension ConfigurationParser {
    static let metricsKeys = ["listen"]
}

extension ConfigurationParser.Walker {
    /// `metrics: {listen: "127.0.0.1:9464"}` — anything but a loopback address is refused
    /// at the value, so a typo never opens the endpoint to the network.
    mutating func metrics(_ node: Node) -> PipelineConfiguration.Metrics? {
        guard node.mapping != nil else {
            error(node, "metrics must be a mapping such as {listen: \"127.0.0.1:\(PipelineConfiguration.Metrics.defaultPort)\"}")
            return nil
        }
        var result: PipelineConfiguration.Metrics?
        var sawListen = false
        for (key, _, value) in pairs(node, what: "metrics", allowed: ConfigurationParser.metricsKeys) where key == "listen" {
            sawListen = true
            guard let text = string(value, "metrics.listen") else { continue }
            switch PipelineConfiguration.Metrics.parseListen(text) {
            case .success(let address):
                result = .init(listen: text, host: address.host, port: address.port, location: location(value))
            case .failure(let problem):
                error(value, "metrics.listen: \(problem.message)")
            }
        }
        if !sawListen { error(node, "metrics needs `listen` (e.g. \"127.0.0.1:\(PipelineConfiguration.Metrics.defaultPort)\"); leave the section out for no endpoint") }
        return result
    }
}
