import SonoraDSP
import Testing

@Suite("Decibels")
struct DecibelsTests {
    @Test func linearGains() {
        #expect(Decibels.toLinear(Float(0)) == 1)
        #expect(abs(Decibels.toLinear(Float(20)) - 10) < 1e-5)
        #expect(abs(Decibels.toLinear(Float(-6.0206)) - 0.5) < 1e-5)
        #expect(abs(Decibels.toLinear(Double(-40)) - 0.01) < 1e-15)
    }

    @Test func fromLinearIsSymmetricAndFloored() {
        #expect(Decibels.fromLinear(Float(1)) == 0)
        #expect(Decibels.fromLinear(Float(-1)) == 0)
        #expect(abs(Decibels.fromLinear(Float(0.5)) + 6.0206) < 1e-4)
        #expect(abs(Decibels.fromLinear(Double(0.1)) + 20) < 1e-12)
        #expect(Decibels.fromLinear(Float(0)) == -120)
        #expect(Decibels.fromLinear(Float(1e-9)) == -120)
        #expect(Decibels.fromLinear(Float.nan) == -120)
        #expect(Decibels.fromLinear(Float(0), floor: -60) == -60)
        #expect(Decibels.fromLinear(Double(0), floor: -200) == -200)
        #expect(abs(Decibels.fromLinear(Double(1e-9), floor: -200) + 180) < 1e-9)
    }

    @Test func fromPower() {
        #expect(abs(Decibels.fromPower(Float(0.01)) + 20) < 1e-5)
        #expect(abs(Decibels.fromPower(Double(2)) - 3.0103) < 1e-4)
        #expect(Decibels.fromPower(Float(0)) == -120)
        #expect(Decibels.fromPower(Float(-1)) == -120)
        #expect(Decibels.fromPower(Double(1e-20)) == -120)
    }

    @Test func bareLiteralsPickFloat() {
        let gain = Decibels.toLinear(-6)
        let level = Decibels.fromLinear(0.5)
        #expect(type(of: gain) == Float.self && type(of: level) == Float.self)
        let precise: Double = Decibels.toLinear(-6)
        #expect(abs(precise - 0.501_187_233_627_272_3) < 1e-15)
    }

    @Test(arguments: [-100.0, -37.5, -3, 0, 6, 24])
    func roundTrips(_ decibels: Double) {
        #expect(abs(Decibels.fromLinear(Decibels.toLinear(decibels)) - decibels) < 1e-9)
        #expect(abs(Decibels.fromLinear(Decibels.toLinear(Float(decibels))) - Float(decibels)) < 1e-3)
    }
}
