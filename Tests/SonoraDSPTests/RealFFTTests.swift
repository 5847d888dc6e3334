import Foundation
import Testing
import SonoraDSP

@Suite struct RealFFTTests {
    @Test(arguments: [4, 8, 64, 256, 4096])
    func matchesDirectTransformAndInverts(size: Int) {
        let fft = RealFFT(size: size)
        var signal = [Float](repeating: 0, count: size)
        var state: UInt32 = 7
        for index in 0..<size {
            state = state &* 1_664_525 &+ 1_013_904_223
            signal[index] = Float(Int32(bitPattern: state)) / Float(Int32.max)
        }
        var real = [Float](repeating: 0, count: size / 2 + 1)
        var imaginary = [Float](repeating: 0, count: size / 2 + 1)
        fft.forward(signal, real: &real, imaginary: &imaginary)
        var worst = 0.0
        for k in 0...(size / 2) {
            var sr = 0.0, si = 0.0
            for n in 0..<size {
                let angle = -2 * Double.pi * Double(k * n % size) / Double(size)
                sr += Double(signal[n]) * cos(angle)
                si += Double(signal[n]) * sin(angle)
            }
            worst = max(worst, abs(sr - Double(real[k])), abs(si - Double(imaginary[k])))
        }
        #expect(worst < 1e-3 * Double(size).squareRoot())
        var back = [Float](repeating: 0, count: size)
        fft.inverse(real: real, imaginary: imaginary, output: &back)
        let error = zip(signal, back).map { abs($0 - $1) }.max() ?? 0
        #expect(error < 1e-5)
    }
}
