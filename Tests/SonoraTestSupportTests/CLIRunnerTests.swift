import Foundation
import SonoraTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite struct CLIRunnerTests {
    let shell = CLIRunner(executable: "/bin/sh")

    @Test("stdout, stderr, exit status, stdin and environment")
    func runs() throws {
        let outcome = try shell.run(["-c", "read line; echo \"out $line $GREETING\"; echo err >&2; exit 3"], stdin: Data("in\n".utf8), environment: ["GREETING": "hi"])
        #expect(outcome.status == 3 && outcome.stdout == "out in hi\n" && outcome.stderr == "err\n" && !outcome.timedOut)
        // More than a pipe holds on both streams at once does not block the child.
        let loud = try shell.run(["-c", "head -c 200000 /dev/zero; head -c 200000 /dev/zero >&2"])
        #expect(loud.status == 0 && loud.stdout.utf8.count == 200_000 && loud.stderr.utf8.count == 200_000)
    }

    @Test("a child past its timeout is killed and says so; a launched child takes signals")
    func timeoutAndSignals() throws {
        var quick = shell
        quick.timeout = 0.5
        let hung = try quick.run(["-c", "sleep 30"])
        #expect(hung.timedOut && hung.signal == SIGKILL)
        // (`sleep`, a grandchild, may keep the pipes open: the runner does not wait for it.)
        let child = try shell.launch(["-c", "trap 'echo hup; exit 5' HUP; while :; do sleep 0.05; done"])
        usleep(200_000)
        #expect(child.isRunning)
        child.signal(SIGHUP)
        let outcome = child.wait(timeout: 10)
        #expect(outcome.status == 5 && outcome.stdout == "hup\n")
    }
}
