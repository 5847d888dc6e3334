import SonoraDSP
import Testing

@Suite("Biquad coefficient designs")
struct BiquadCoefficientsTests {
    let rate = 48_000.0

    @Test func identityPassesEverything() {
        for frequency in [0.0, 100, 1000, 23_999] {
            #expect(BiquadCoefficients.identity.magnitude(atFrequency: frequency, sampleRate: rate) == 1)
        }
    }

    @Test(arguments: [-18.0, -6, 3, 12])
    func peakingHasItsGainAtTheCentreAndUnityFarAway(_ gain: Double) {
        let bell = BiquadCoefficients.peaking(frequency: 1000, q: 2, gainDB: gain, sampleRate: rate)
        #expect(abs(bell.magnitudeDB(atFrequency: 1000, sampleRate: rate) - gain) < 1e-9)
        #expect(abs(bell.magnitudeDB(atFrequency: 0, sampleRate: rate)) < 1e-9)
        #expect(abs(bell.magnitudeDB(atFrequency: 24_000, sampleRate: rate)) < 1e-9)
        // A bell is symmetric about its centre on a log-frequency axis only approximately
        // (bilinear warping), but it must at least be smaller in magnitude off-centre.
        #expect(abs(bell.magnitudeDB(atFrequency: 500, sampleRate: rate)) < abs(gain))
    }

    @Test(arguments: [-12.0, 6, 15])
    func shelvesReachTheirGainAtTheExtremesAndHalfAtTheCorner(_ gain: Double) {
        let low = BiquadCoefficients.lowShelf(frequency: 300, q: 0.7071, gainDB: gain, sampleRate: rate)
        #expect(abs(low.magnitudeDB(atFrequency: 0, sampleRate: rate) - gain) < 1e-9)
        #expect(abs(low.magnitudeDB(atFrequency: 24_000, sampleRate: rate)) < 1e-9)
        #expect(abs(low.magnitudeDB(atFrequency: 300, sampleRate: rate) - gain / 2) < 1e-9)

        let high = BiquadCoefficients.highShelf(frequency: 5000, q: 0.7071, gainDB: gain, sampleRate: rate)
        #expect(abs(high.magnitudeDB(atFrequency: 24_000, sampleRate: rate) - gain) < 1e-9)
        #expect(abs(high.magnitudeDB(atFrequency: 0, sampleRate: rate)) < 1e-9)
        #expect(abs(high.magnitudeDB(atFrequency: 5000, sampleRate: rate) - gain / 2) < 1e-9)
    }

    @Test func passAndStopBands() {
        let q = 0.70710678118654752
        let low = BiquadCoefficients.lowPass(frequency: 1000, q: q, sampleRate: rate)
        #expect(abs(low.magnitudeDB(atFrequency: 0, sampleRate: rate)) < 1e-9)
        #expect(abs(low.magnitudeDB(atFrequency: 1000, sampleRate: rate) + 3.0103) < 1e-3)
        #expect(low.magnitude(atFrequency: 24_000, sampleRate: rate) < 1e-12)

        let high = BiquadCoefficients.highPass(frequency: 1000, q: q, sampleRate: rate)
        #expect(abs(high.magnitudeDB(atFrequency: 24_000, sampleRate: rate)) < 1e-9)
        #expect(abs(high.magnitudeDB(atFrequency: 1000, sampleRate: rate) + 3.0103) < 1e-3)
        #expect(high.magnitude(atFrequency: 0, sampleRate: rate) < 1e-12)

        let band = BiquadCoefficients.bandPass(frequency: 2000, q: 5, sampleRate: rate)
        #expect(abs(band.magnitudeDB(atFrequency: 2000, sampleRate: rate)) < 1e-9)
        #expect(band.magnitude(atFrequency: 0, sampleRate: rate) < 1e-12)
        #expect(band.magnitudeDB(atFrequency: 1000, sampleRate: rate) < -10)

        let notch = BiquadCoefficients.notch(frequency: 2000, q: 5, sampleRate: rate)
        #expect(notch.magnitude(atFrequency: 2000, sampleRate: rate) < 1e-9)
        #expect(abs(notch.magnitudeDB(atFrequency: 0, sampleRate: rate)) < 1e-9)

        let allPass = BiquadCoefficients.allPass(frequency: 2000, q: 3, sampleRate: rate)
        for frequency in stride(from: 0.0, through: 24_000, by: 750) {
            #expect(abs(allPass.magnitude(atFrequency: frequency, sampleRate: rate) - 1) < 1e-12)
        }
    }

    @Test func lowFrequencyDesignsStayAccurate() {
        // 10 Hz at 192 kHz: poles within 2e-4 of z = 1.
        let low = BiquadCoefficients.lowPass(frequency: 10, q: 0.7071, sampleRate: 192_000)
        #expect(abs(low.magnitudeDB(atFrequency: 0, sampleRate: 192_000)) < 1e-6)
        #expect(abs(low.magnitudeDB(atFrequency: 10, sampleRate: 192_000) + 3.0103) < 1e-3)
    }

    @Test func noInputMakesNaN() {
        let frequencies = [0.0, -5, .nan, .infinity, -.infinity, 1e-300, 24_000, 1e12]
        let qs = [0.0, -1, .nan, .infinity, 1e-9, 1e9]
        let gains = [0.0, .nan, .infinity, -.infinity, 500]
        let rates = [48_000.0, 0, .nan, -44_100]
        for frequency in frequencies {
            for q in qs {
                for rate in rates {
                    var designs: [BiquadCoefficients] = [
                        .lowPass(frequency: frequency, q: q, sampleRate: rate),
                        .highPass(frequency: frequency, q: q, sampleRate: rate),
                        .bandPass(frequency: frequency, q: q, sampleRate: rate),
                        .notch(frequency: frequency, q: q, sampleRate: rate),
                        .allPass(frequency: frequency, q: q, sampleRate: rate),
                    ]
                    for gain in gains {
                        designs += [
                            .peaking(frequency: frequency, q: q, gainDB: gain, sampleRate: rate),
                            .lowShelf(frequency: frequency, q: q, gainDB: gain, sampleRate: rate),
                            .highShelf(frequency: frequency, q: q, gainDB: gain, sampleRate: rate),
                        ]
                    }
                    for design in designs {
                        let values = [design.b0, design.b1, design.b2, design.a1, design.a2]
                        #expect(values.allSatisfy { $0.isFinite }, "\(design) for f \(frequency) q \(q) rate \(rate)")
                        // Stable: both poles inside the unit circle (|a2| < 1, |a1| < 1 + a2).
                        #expect(abs(design.a2) < 1 && abs(design.a1) < 1 + design.a2)
                    }
                }
            }
        }
    }
}
