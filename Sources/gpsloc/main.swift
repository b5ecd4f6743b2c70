import Foundation
import GPSLocCLI

exit(GPSLoc.main(Array(CommandLine.arguments.dropFirst())))
