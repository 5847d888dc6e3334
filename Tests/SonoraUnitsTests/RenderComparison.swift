import SonoraUnits
import Testing

// What the render plan's tests share: the units their graphs are made of, and the
// sample-for-sample comparison of two renders.

func toneUnit(_ frequency: Float = 440) throws -> ToneGeneratorUnit {
    let tone = ToneGeneratorUnit()
    try tone.setParameter(ToneGeneratorUnit.Parameter.frequency, to: frequency)
    return tone
}

func gainUnit(_ decibels: Float) throws -> GainUnit {
    let gain = GainUnit()
    try gain.setParameter(GainUnit.Parameter.gain, to: decibels)
    return gain
}

/// Expects `rendered` to equal `reference` sample for sample (naming the first frame that
/// differs), and the reference to be more than silence.
func expectSameSamples(_ rendered: [[Float]], _ reference: [[Float]], sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(rendered.map(\.count) == reference.map(\.count), sourceLocation: sourceLocation)
    for channel in reference.indices where channel < rendered.count {
        let first = zip(rendered[channel], reference[channel]).enumerated().first { $0.element.0 != $0.element.1 }
        #expect(first == nil, "channel \(channel) differs first at frame \(first?.offset ?? -1): \(String(describing: first?.element))", sourceLocation: sourceLocation)
    }
    #expect(reference.joined().contains { $0 != 0 }, "the shape renders something", sourceLocation: sourceLocation)
}
