import Foundation

/// The scale benchmark's series as an SVG line chart: cost per unit (log y) against size
/// (log x), one line per case, so growth — or its absence, a flat line — shows at a glance.
enum ScalePlot {
    static let colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"]

    static func svg(_ series: [ScaleBenchmark.Series], title: String) -> String {
        let width = 760.0, height = 460.0
        let left = 70.0, right = 250.0, top = 40.0, bottom = 50.0
        let plotWidth = width - left - right, plotHeight = height - top - bottom
        let points = series.flatMap { line in zip(line.sizes, line.costs).filter { $0.0 > 0 && $0.1 > 0 } }
        let xs = points.map { log10(Double($0.0)) }
        let ys = points.map { log10($0.1) }
        // Whole decades on both axes.
        let xLow = floor(xs.min() ?? 0), xHigh = max(ceil(xs.max() ?? 1), xLow + 1)
        let yLow = floor(ys.min() ?? 0), yHigh = max(ceil(ys.max() ?? 1), yLow + 1)
        func x(_ size: Double) -> Double { left + (log10(size) - xLow) / (xHigh - xLow) * plotWidth }
        func y(_ cost: Double) -> Double { top + plotHeight - (log10(cost) - yLow) / (yHigh - yLow) * plotHeight }
        func number(_ value: Double) -> String { String(format: "%.1f", value) }

        var svg = [
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(height))\" viewBox=\"0 0 \(Int(width)) \(Int(height))\" font-family=\"sans-serif\" font-size=\"12\">",
            "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>",
            "<text x=\"\(number(left))\" y=\"22\" font-size=\"14\">\(escape(title))</text>",
        ]
        // Grid and tick labels: decades, with 2 and 5 as light lines in between.
        for decade in Int(xLow)...Int(xHigh) {
            for step in [1.0, 2, 5] {
                let size = step * pow(10, Double(decade))
                guard log10(size) <= xHigh + 1e-9 else { continue }
                let at = number(x(size))
                svg.append("<line x1=\"\(at)\" y1=\"\(number(top))\" x2=\"\(at)\" y2=\"\(number(top + plotHeight))\" stroke=\"\(step == 1 ? "#bbb" : "#eee")\"/>")
                if step == 1 {
                    svg.append("<text x=\"\(at)\" y=\"\(number(top + plotHeight + 16))\" text-anchor=\"middle\">\(Int(size))</text>")
                }
            }
        }
        for decade in Int(yLow)...Int(yHigh) {
            for step in [1.0, 2, 5] {
                let cost = step * pow(10, Double(decade))
                guard log10(cost) <= yHigh + 1e-9 else { continue }
                let at = number(y(cost))
                svg.append("<line x1=\"\(number(left))\" y1=\"\(at)\" x2=\"\(number(left + plotWidth))\" y2=\"\(at)\" stroke=\"\(step == 1 ? "#bbb" : "#eee")\"/>")
                if step == 1 {
                    svg.append("<text x=\"\(number(left - 6))\" y=\"\(number(y(cost) + 4))\" text-anchor=\"end\">\(label(cost))</text>")
                }
            }
        }
        svg.append("<rect x=\"\(number(left))\" y=\"\(number(top))\" width=\"\(number(plotWidth))\" height=\"\(number(plotHeight))\" fill=\"none\" stroke=\"#333\"/>")
        svg.append("<text x=\"\(number(left + plotWidth / 2))\" y=\"\(number(height - 12))\" text-anchor=\"middle\">size (nodes, inputs, instances, queues, players; log scale)</text>")
        svg.append("<text transform=\"translate(16 \(number(top + plotHeight / 2))) rotate(-90)\" text-anchor=\"middle\">ns per unit per cycle (log scale)</text>")

        for (index, line) in series.enumerated() {
            let color = colors[index % colors.count]
            let valid = zip(line.sizes, line.costs).filter { $0.0 > 0 && $0.1 > 0 }
            let path = valid.map { "\(number(x(Double($0.0)))),\(number(y($0.1)))" }.joined(separator: " ")
            svg.append("<polyline points=\"\(path)\" fill=\"none\" stroke=\"\(color)\" stroke-width=\"2\"/>")
            for (size, cost) in valid {
                svg.append("<circle cx=\"\(number(x(Double(size))))\" cy=\"\(number(y(cost)))\" r=\"3\" fill=\"\(color)\"><title>\(escape(line.name)): \(size) → \(String(format: "%.0f", cost)) \(escape(line.costUnit))</title></circle>")
            }
            let legendY = top + 10 + Double(index) * 36
            svg.append("<line x1=\"\(number(width - right + 14))\" y1=\"\(number(legendY))\" x2=\"\(number(width - right + 34))\" y2=\"\(number(legendY))\" stroke=\"\(color)\" stroke-width=\"2\"/>")
            svg.append("<text x=\"\(number(width - right + 40))\" y=\"\(number(legendY + 4))\">\(escape(line.name))</text>")
            svg.append("<text x=\"\(number(width - right + 40))\" y=\"\(number(legendY + 18))\" fill=\"#666\" font-size=\"10\">\(escape(line.costUnit))</text>")
        }
        svg.append("</svg>")
        return svg.joined(separator: "\n") + "\n"
    }

    static func label(_ cost: Double) -> String {
        cost >= 1_000_000 ? "\(Int(cost / 1_000_000)) ms" : cost >= 1000 ? "\(Int(cost / 1000)) µs" : "\(Int(cost)) ns"
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }
}
