# Runs COMMAND (a ;-list) and passes only when it exits with EXIT_CODE and its stderr matches MESSAGE (a regular
# expression) and the file NO_OUTPUT was not written: a rejection must name what is wrong and leave nothing behind.
#   cmake -DCOMMAND=... -DEXIT_CODE=2 -DMESSAGE=... -DNO_OUTPUT=file -P expect_refusal.cmake
file(REMOVE "${NO_OUTPUT}")
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
if(NOT code STREQUAL "${EXIT_CODE}")
  message(FATAL_ERROR "exit ${code}, expected ${EXIT_CODE}\nstdout: ${out}\nstderr: ${err}")
endif()
if(NOT err MATCHES "${MESSAGE}")
  message(FATAL_ERROR "stderr does not match '${MESSAGE}':\n${err}")
endif()
if(EXISTS "${NO_OUTPUT}")
  message(FATAL_ERROR "a refused run wrote ${NO_OUTPUT}")
endif()
