import SonoraCore
import Testing

@Suite("AudioError and FourCharCode")
struct AudioErrorTests {
    @Test func codesKeepCoreAudiosValues() {
        #expect(AudioError.Code.invalidProperty.rawValue == -10879)
        #expect(AudioError.Code.invalidScope.rawValue == -10866)
        #expect(AudioError.Code.invalidElement.rawValue == -10877)
        #expect(AudioError.Code.invalidParameter.rawValue == -10878)
        #expect(AudioError.Code.formatNotSupported.rawValue == -10868)
        #expect(AudioError.Code.initialized.rawValue == -10849)
        #expect(AudioError.Code.cannotDoInCurrentContext.rawValue == -10863)
        #expect(AudioError.Code.fileNotFound.rawValue == -43)
        #expect(AudioError.Code.unsupportedDataFormat.rawValue == 1_718_449_215)  // 'fmt?'
        #expect(AudioError.Code.unsupportedFileType.rawValue == 1_954_115_647)  // 'typ?'
        #expect(AudioError.Code.queueInvalidBuffer.rawValue == -66687)
    }

    @Test func descriptionsNameTheCodeAndTheProblem() {
        let scope = AudioError(.invalidScope, "scope 7 does not exist")
        #expect(scope.description == "invalid scope (-10866): scope 7 does not exist")
        let format = AudioError(.unsupportedDataFormat, "no such codec")
        #expect(format.description == "unsupported data format ('fmt?'): no such codec")
        #expect(AudioError.Code(rawValue: 12345).description == "12345")
    }

    @Test func fourCharCodes() {
        let code: FourCharCode = "lpcm"
        #expect(code.rawValue == 0x6C70_636D)
        #expect(code.description == "'lpcm'")
        #expect(FourCharCode(characters: "toolong") == nil)
        #expect(FourCharCode(characters: "ab\u{1}c") == nil)
        #expect(FourCharCode(rawValue: 0xFFFF_D5D3).description == "-10797")
        #expect(AudioFormatID.mpeg4AAC.description == "'aac '")
    }
}
