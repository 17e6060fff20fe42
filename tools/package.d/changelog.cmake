# Writes the package's Debian changelog (changelog.in with version, commit and date filled in).
# Run as: cmake -DSOURCE_DIR=... -DIN=... -DOUT=... -DVERSION=... -DDATE=... -P changelog.cmake
# The commit comes from SANDBOX_COMMIT when set (a build root sees the source without its git
# directory), else from git, as in version.cmake.
set(COMMIT "$ENV{SANDBOX_COMMIT}")
if(COMMIT STREQUAL "")
  execute_process(
    COMMAND git -C "${SOURCE_DIR}" describe --always --dirty --abbrev=12 --exclude=*
    OUTPUT_VARIABLE COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
endif()
if(COMMIT STREQUAL "")
  set(COMMIT "unknown")
endif()
configure_file("${IN}" "${OUT}" @ONLY)
