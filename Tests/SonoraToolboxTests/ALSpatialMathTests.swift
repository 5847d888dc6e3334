import Foundation
import SonoraToolbox
import Testing

/// OpenAL 1.1 §3.4–3.5 computed by the API: each distance model (clamped and not), cones,
/// doppler and the listener-frame direction, against the specification's formulas written
/// out independently here.
@Suite("OpenAL: gains, cones, doppler and direction")
struct ALSpatialMathTests {
    /// The §3.4 formulas, as the specification writes them (in Double).
    static func specGain(_ model: ALDistanceModel, d: Double, ref: Double, max: Double, rolloff: Double) -> Double {
        var distance = d
        switch model {
        case .none:
            return 1
        case .inverseClamped, .linearClamped, .exponentClamped:
            distance = Swift.max(distance, ref)
            distance = Swift.min(distance, max)
        default:
            break
        }
        switch model {
        case .inverse, .inverseClamped: return ref / (ref + rolloff * (distance - ref))
        case .linear, .linearClamped:
            distance = Swift.min(distance, max)
            return 1 - rolloff * (distance - ref) / (max - ref)
        case .exponent, .exponentClamped: return pow(distance / ref, -rolloff)
        case .none: return 1
        }
    }

    static func decibels(_ gain: Double) -> Double { 20 * log10(gain) }

    @Test("every distance model, clamped and not, equals §3.4's formula within 0.01 dB", arguments: ALDistanceModel.allCases)
    func distanceModels(model: ALDistanceModel) {
        let cases: [(ref: Double, max: Double, rolloff: Double)] = [(1, 100, 1), (2, 50, 0.5), (0.5, 20, 2), (1, 10, 1)]
        for (ref, max, rolloff) in cases {
            for d in stride(from: 0.1, through: 150, by: 0.7) {
                // Where the inverse formula's denominator is not positive the specification's gain is
                // negative or infinite; the API gives 1 there (as OpenAL Soft) — see `degenerate`.
                if model == .inverse, ref + rolloff * (d - ref) <= 0 { continue }
                let got = Double(model.gain(distance: Float(d), referenceDistance: Float(ref), maxDistance: Float(max), rolloffFactor: Float(rolloff)))
                var expected = Self.specGain(model, d: d, ref: ref, max: max, rolloff: rolloff)
                if model == .linear || model == .linearClamped { expected = Swift.max(expected, 0) }
                if expected < 1e-4 {
                    #expect(abs(got - expected) < 1e-5, "\(model) d=\(d) ref=\(ref) max=\(max) rolloff=\(rolloff)")
                } else {
                    #expect(abs(Self.decibels(got) - Self.decibels(expected)) < 0.01, "\(model) d=\(d): \(got) vs \(expected)")
                }
            }
        }
    }

    @Test("clamped models hold the gain constant inside the reference distance and beyond the maximum")
    func clampingFlattens() {
        for model in [ALDistanceModel.inverseClamped, .linearClamped, .exponentClamped] {
            let inside = model.gain(distance: 0.2, referenceDistance: 1, maxDistance: 10, rolloffFactor: 1)
            let beyond = model.gain(distance: 40, referenceDistance: 1, maxDistance: 10, rolloffFactor: 1)
            let atMax = model.gain(distance: 10, referenceDistance: 1, maxDistance: 10, rolloffFactor: 1)
            #expect(inside == 1, "\(model)")
            #expect(beyond == atMax, "\(model)")
        }
        // Unclamped inverse keeps falling past the maximum and rises inside the reference distance.
        #expect(ALDistanceModel.inverse.gain(distance: 40, referenceDistance: 1, maxDistance: 10, rolloffFactor: 1) < 0.03)
        #expect(ALDistanceModel.inverse.gain(distance: 0.5, referenceDistance: 1, maxDistance: 10, rolloffFactor: 1) > 1)
    }

    @Test("degenerate settings give gain 1 instead of dividing by zero")
    func degenerate() {
        #expect(ALDistanceModel.inverse.gain(distance: 5, referenceDistance: 0, maxDistance: 10, rolloffFactor: 1) == 1)
        #expect(ALDistanceModel.linear.gain(distance: 5, referenceDistance: 3, maxDistance: 3, rolloffFactor: 1) == 1)
        #expect(ALDistanceModel.exponent.gain(distance: 0, referenceDistance: 1, maxDistance: 10, rolloffFactor: 1) == 1)
        #expect(ALDistanceModel.inverseClamped.gain(distance: 5, referenceDistance: 10, maxDistance: 2, rolloffFactor: 1) == 1)
        #expect(ALDistanceModel.inverse.gain(distance: 0.1, referenceDistance: 0.5, maxDistance: 20, rolloffFactor: 2) == 1,
                "ref + rolloff·(d − ref) < 0: no negative gain")
    }

    @Test("cone: 1 inside the inner angle, the outer gain outside the outer angle, linear in between")
    func cone() {
        let cone = ALCone(innerAngle: 60, outerAngle: 180, outerGain: 0.25)
        let axis: SIMD3<Float> = [0, 0, -1]
        func heard(atDegrees angle: Float) -> Float {
            let radians = angle * .pi / 180
            return cone.gain(direction: axis, toListener: [sin(radians), 0, -cos(radians)])
        }
        #expect(heard(atDegrees: 0) == 1)
        #expect(heard(atDegrees: 29) == 1, "29° off axis is inside the 60° (whole) inner cone")
        #expect(abs(heard(atDegrees: 60) - (1 + (0.25 - 1) * (120 - 60) / 120)) < 1e-4, "halfway: whole angle 120° of 60…180")
        #expect(abs(heard(atDegrees: 90) - 0.25) < 1e-4)
        #expect(heard(atDegrees: 135) == 0.25)
        #expect(cone.gain(direction: .zero, toListener: [1, 0, 0]) == 1, "no direction: omnidirectional")
        #expect(ALCone().gain(direction: axis, toListener: [0, 0, 1]) == 1, "the default 360° cone is omnidirectional, straight behind too")
        #expect(ALCone(innerAngle: 360, outerAngle: 360, outerGain: 0).gain(direction: [0.3, 0.1, -1], toListener: [-0.3, -0.1, 1]) == 1)
    }

    @Test("doppler: §3.5.2's shift for a source and a listener moving along the axis, and its limits")
    func doppler() {
        let doppler = ALDoppler(factor: 1, speedOfSound: 343.3)
        // Source 10 m ahead (−z), coming at the listener at 20 m/s.
        let approaching = doppler.pitchScale(sourcePosition: [0, 0, -10], sourceVelocity: [0, 0, 20], listenerPosition: .zero, listenerVelocity: .zero)
        #expect(abs(approaching - 343.3 / (343.3 - 20)) < 1e-5)
        let receding = doppler.pitchScale(sourcePosition: [0, 0, -10], sourceVelocity: [0, 0, -20], listenerPosition: .zero, listenerVelocity: .zero)
        #expect(abs(receding - 343.3 / (343.3 + 20)) < 1e-5)
        // The listener moving towards the source at 30 m/s.
        let listenerMoving = doppler.pitchScale(sourcePosition: [0, 0, -10], sourceVelocity: .zero, listenerPosition: .zero, listenerVelocity: [0, 0, -30])
        #expect(abs(listenerMoving - (343.3 + 30) / 343.3) < 1e-5)
        // A perpendicular velocity shifts nothing; factor 2 doubles the velocities' effect.
        #expect(doppler.pitchScale(sourcePosition: [0, 0, -10], sourceVelocity: [20, 0, 0], listenerPosition: .zero, listenerVelocity: .zero) == 1)
        let doubled = ALDoppler(factor: 2, speedOfSound: 343.3).pitchScale(sourcePosition: [0, 0, -10], sourceVelocity: [0, 0, 20], listenerPosition: .zero, listenerVelocity: .zero)
        #expect(abs(doubled - 343.3 / (343.3 - 40)) < 1e-5)
        #expect(ALDoppler(factor: 0).pitchScale(sourcePosition: [0, 0, -10], sourceVelocity: [0, 0, 100], listenerPosition: .zero, listenerVelocity: .zero) == 1)
        #expect(doppler.pitchScale(sourcePosition: [0, 0, -10], sourceVelocity: .zero, listenerPosition: .zero, listenerVelocity: [0, 0, 400]) == 0,
                "a listener outrunning the sound hears nothing")
    }

    @Test("direction in the listener's frame: ahead 0°, right +90°, left −90°, behind 180°, above +90° elevation; orientation turns it")
    func direction() {
        var listener = ALListenerProperties()
        func place(_ position: SIMD3<Float>, relative: Bool = false) -> ALSpatialization {
            var source = ALSourceProperties()
            source.position = position
            source.isRelative = relative
            return ALSpatialization(source: source, listener: listener, distanceModel: .none, doppler: ALDoppler())
        }
        #expect(abs(place([0, 0, -2]).azimuth) < 1e-4)
        #expect(abs(place([2, 0, 0]).azimuth - 90) < 1e-4)
        #expect(abs(place([-2, 0, 0]).azimuth + 90) < 1e-4)
        #expect(abs(abs(place([0, 0, 2]).azimuth) - 180) < 1e-4)
        #expect(abs(place([0, 3, 0]).elevation - 90) < 1e-4)
        #expect(abs(place([1, 0, -1]).azimuth - 45) < 1e-4)
        #expect(place([0, 0, -2]).distance == 2)
        // Turned to face +x: a source at +x is ahead, one at −z is now on the left.
        listener.at = [1, 0, 0]
        #expect(abs(place([5, 0, 0]).azimuth) < 1e-4)
        #expect(abs(place([0, 0, -5]).azimuth + 90) < 1e-4)
        // Relative sources ignore the listener's position and orientation.
        listener.position = [100, 0, 0]
        #expect(abs(place([2, 0, 0], relative: true).azimuth - 90) < 1e-4)
        #expect(place([2, 0, 0], relative: true).distance == 2)
    }

    @Test("the final gain is clamp(distance × cone × gain, min, max) × listener gain, in dB for the unit")
    func finalGain() {
        var source = ALSourceProperties()
        source.position = [0, 0, -4]
        source.gain = 0.5
        var listener = ALListenerProperties()
        listener.gain = 0.5
        let plain = ALSpatialization(source: source, listener: listener, distanceModel: .inverseClamped, doppler: ALDoppler())
        #expect(abs(plain.distanceGain - 0.25) < 1e-6)
        #expect(abs(plain.gain - 0.25 * 0.5 * 0.5) < 1e-6)
        #expect(abs(plain.gainDecibels - Float(20 * log10(0.0625))) < 1e-4)
        source.minGain = 0.3
        let floored = ALSpatialization(source: source, listener: listener, distanceModel: .inverseClamped, doppler: ALDoppler())
        #expect(abs(floored.gain - 0.3 * 0.5) < 1e-6, "min gain holds before the listener gain")
        source.minGain = 0
        source.maxGain = 0.1
        source.position = [0, 0, -1]
        let capped = ALSpatialization(source: source, listener: listener, distanceModel: .inverseClamped, doppler: ALDoppler())
        #expect(abs(capped.gain - 0.1 * 0.5) < 1e-6)
        source.gain = 0
        #expect(ALSpatialization(source: source, listener: listener, distanceModel: .none, doppler: ALDoppler()).gainDecibels == -120)
    }
}
