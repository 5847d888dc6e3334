import SonoraDSP
import Testing

@Suite("Pan laws")
struct PanLawTests {
    @Test func equalPower() {
        let law = PanLaw.equalPower
        #expect(law.gains(pan: -1) == (1, 0))
        #expect(law.gains(pan: 1) == (0, 1))
        let centre = law.gains(pan: 0)
        #expect(centre.left == centre.right && abs(centre.left - 0.70710678) < 1e-7)
        for pan in stride(from: Float(-1), through: 1, by: 0.125) {
            let (left, right) = law.gains(pan: pan)
            #expect(abs(left * left + right * right - 1) < 1e-6)
        }
    }

    @Test func linear() {
        let law = PanLaw.linear
        #expect(law.gains(pan: -1) == (1, 0))
        #expect(law.gains(pan: 0) == (0.5, 0.5))
        #expect(law.gains(pan: 1) == (0, 1))
        #expect(law.gains(pan: 0.5) == (0.25, 0.75))
    }

    @Test func constantGain() {
        let law = PanLaw.constantGain
        #expect(law.gains(pan: -1) == (1, 0))
        #expect(law.gains(pan: 0) == (1, 1))
        #expect(law.gains(pan: 1) == (0, 1))
        #expect(law.gains(pan: -0.25) == (1, 0.75))
        #expect(law.gains(pan: 0.25) == (0.75, 1))
    }

    @Test func panIsClampedAndNaNIsCentre() {
        for law in [PanLaw.equalPower, .linear, .constantGain] {
            #expect(law.gains(pan: -7) == law.gains(pan: -1))
            #expect(law.gains(pan: .infinity) == law.gains(pan: 1))
            #expect(law.gains(pan: .nan) == law.gains(pan: 0))
        }
    }
}
