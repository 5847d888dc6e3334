import SonoraPipeline
import Testing

/// A mixer3d source's position (OpenAL's frame: listener at the origin facing −z, +x
/// right, +y up) as the 3D mixer's azimuth, elevation and distance, and back.
@Suite("mixer3d positions")
struct Mixer3DPositionTests {
    static func close(_ a: Double, _ b: Double, _ tolerance: Double = 1e-9) -> Bool { abs(a - b) <= tolerance }

    @Test("the axes: ahead is azimuth 0, right +90, left −90, behind 180, above elevation +90", arguments: [
        // x, y, z, azimuth, elevation, distance
        (0.0, 0.0, -2.0, 0.0, 0.0, 2.0),
        (1.0, 0.0, 0.0, 90.0, 0.0, 1.0),
        (-3.0, 0.0, 0.0, -90.0, 0.0, 3.0),
        (0.0, 0.0, 1.0, 180.0, 0.0, 1.0),
        (0.0, 5.0, 0.0, 0.0, 90.0, 5.0),
        (0.0, -1.0, 0.0, 0.0, -90.0, 1.0),
        (1.0, 0.0, -1.0, 45.0, 0.0, 2.0.squareRoot()),
        (-1.0, 0.0, 1.0, -135.0, 0.0, 2.0.squareRoot()),
        (1.0, 2.0.squareRoot(), -1.0, 45.0, 45.0, 2.0),
        (0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
    ])
    func axes(x: Double, y: Double, z: Double, azimuth: Double, elevation: Double, distance: Double) {
        let position = Mixer3DPosition(x: x, y: y, z: z)
        #expect(Self.close(position.azimuth, azimuth), "azimuth of \(position): \(position.azimuth)")
        #expect(Self.close(position.elevation, elevation), "elevation of \(position): \(position.elevation)")
        #expect(Self.close(position.distance, distance), "distance of \(position): \(position.distance)")
        let back = Mixer3DPosition(azimuth: azimuth, elevation: elevation, distance: distance)
        #expect(Self.close(back.x, x) && Self.close(back.y, y) && Self.close(back.z, z), "\(back) from (\(azimuth), \(elevation), \(distance))")
    }

    @Test("any point survives the trip through azimuth, elevation and distance")
    func roundTrip() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<1000 {
            let point = Mixer3DPosition(
                x: .random(in: -100...100, using: &generator), y: .random(in: -100...100, using: &generator), z: .random(in: -100...100, using: &generator))
            let back = Mixer3DPosition(azimuth: point.azimuth, elevation: point.elevation, distance: point.distance)
            #expect(Self.close(back.x, point.x, 1e-9) && Self.close(back.y, point.y, 1e-9) && Self.close(back.z, point.z, 1e-9), "\(point) came back as \(back)")
            #expect((-180...180).contains(point.azimuth) && (-90...90).contains(point.elevation))
        }
    }

    @Test("x,y,z as the control socket writes it", arguments: ["1,0,-2", "1, 0, -2", "[1,0,-2]", " [ 1 , 0 , -2 ] ", "1 0 -2", "1e0,0,-2.0"])
    func parses(text: String) throws {
        let position = try Mixer3DPosition.parse(text).get()
        #expect(position == Mixer3DPosition(x: 1, y: 0, z: -2))
        #expect(position.description == "1,0,-2")
    }

    @Test("bad positions are refused, saying what a position is", arguments: [
        ("1,0", "has 2 numbers"), ("", "has 0 numbers"), ("1,2,3,4", "has 4 numbers"), ("a,0,0", "'a' in 'a,0,0' is not a finite number"),
        ("nan,0,0", "is not a finite number"), ("0,inf,0", "is not a finite number"), ("20000,0,0", "out of range: 20000 m away"),
    ])
    func refused(text: String, message: String) {
        guard case .failure(let problem) = Mixer3DPosition.parse(text) else {
            Issue.record("'\(text)' was accepted")
            return
        }
        #expect(problem.message.contains(message), "\(problem.message)")
        if !message.contains("out of range") { #expect(problem.message.contains("x,y,z in metres"), "\(problem.message)") }
    }
}
