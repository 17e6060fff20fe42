# Writes the package's Debian changelog (changelog.in with version, commit and date filled in).
# Run as: cmake -DSOURCE_DIR=... -DIN=... -DOUT=... -DVERSION=... -DDATE=... -P changelog.cmake
execute_process(
  COMMAND git -C "${SOURCE_DIR}" describe --always --dirty --abbrev=12 --exclude=*
  OUTPUT_VARIABLE COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(COMMIT STREQUAL "")
  set(COMMIT "unknown")
endif()
configure_file("${IN}" "${OUT}" @ONLY)
