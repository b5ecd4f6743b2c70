import GPSLocCLI
import Glibc

exit(GPSLoc.main(Array(CommandLine.arguments.dropFirst())))
