// KissFFT (BSD) from Debian's libkissfft-dev: the anchor of `sonora-bench voice`'s FFT rows.
#ifndef kiss_fft_scalar
#define kiss_fft_scalar float
#endif
#include <kissfft/kiss_fftr.h>
