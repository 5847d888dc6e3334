#if canImport(Glibc)
import Glibc
#endif
import CKissFFT
import SonoraDSP

/// Sonora's real FFT (the echo canceller's) against KissFFT's real transform (Debian's
/// libkissfft, BSD) at the canceller's sizes: a forward and an inverse transform per pair,
/// each library in its own spectrum layout (split real/imaginary vs interleaved complex),
/// same input, best of several trials. The issue allows Sonora's own FFT only where it is
/// at least as fast as a well-kept library; this is the row that says whether it is.
enum FFTBenchmark {
    struct Result { var sonora: Double, kiss: Double }  // nanoseconds per forward+inverse pair

    static func measure(size: Int, pairs: Int = 100_000, trials: Int = 5) -> Result {
        let input = UnsafeMutablePointer<Float>.allocate(capacity: size)
        let output = UnsafeMutablePointer<Float>.allocate(capacity: size)
        let real = UnsafeMutablePointer<Float>.allocate(capacity: size / 2 + 1)
        let imaginary = UnsafeMutablePointer<Float>.allocate(capacity: size / 2 + 1)
        let spectrum = UnsafeMutablePointer<kiss_fft_cpx>.allocate(capacity: size / 2 + 1)
        defer { input.deallocate(); output.deallocate(); real.deallocate(); imaginary.deallocate(); spectrum.deallocate() }
        var seed: UInt32 = 12345
        for n in 0..<size {
            seed = seed &* 1_664_525 &+ 1_013_904_223
            input[n] = Float(Int32(bitPattern: seed)) / Float(Int32.max)
        }
        let fft = RealFFT(size: size)
        let forward = kiss_fftr_alloc(Int32(size), 0, nil, nil)
        let inverse = kiss_fftr_alloc(Int32(size), 1, nil, nil)
        defer { free(UnsafeMutableRawPointer(forward)); free(UnsafeMutableRawPointer(inverse)) }  // kiss_fftr_free is a macro for free

        var sonoraBest = Double.infinity, kissBest = Double.infinity
        var sink: Float = 0
        for _ in 0..<trials {
            // Alternate the two so a noisy neighbour hits both alike.
            var start = now()
            for _ in 0..<pairs {
                fft.forward(input, real: real, imaginary: imaginary)
                fft.inverse(real: real, imaginary: imaginary, output: output)
            }
            sonoraBest = min(sonoraBest, (now() - start) / Double(pairs))
            sink += output[1]
            start = now()
            for _ in 0..<pairs {
                kiss_fftr(forward, input, spectrum)
                kiss_fftri(inverse, spectrum, output)
            }
            kissBest = min(kissBest, (now() - start) / Double(pairs))
            sink += output[1]
        }
        if sink.isNaN { print("") }  // keeps the loops from being optimised away
        return Result(sonora: sonoraBest, kiss: kissBest)
    }

    private static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) * 1e9 + Double(ts.tv_nsec)
    }
}
