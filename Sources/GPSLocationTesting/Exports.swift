// The gpsd and gpsfake processes moved to the production module GPSDProcesses (gpsloc uses
// them for `replay --via gpsd`); `import GPSLocationTesting` still brings them, as before.
@_exported import GPSDProcesses
