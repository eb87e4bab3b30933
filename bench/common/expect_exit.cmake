# Runs a command and checks its exit status and output (cmake -P; CTest's own pass/fail regexes
# ignore the exit status once one is set):
#   cmake -DCODE=2 "-DMATCH=regex" "-DCOMMAND=prog|arg|..." -P expect_exit.cmake
cmake_minimum_required(VERSION 3.24)
string(REPLACE "|" ";" command "${COMMAND}")
execute_process(COMMAND ${command} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT "${code}" STREQUAL "${CODE}")
  message(FATAL_ERROR "expect_exit: '${COMMAND}' exited with ${code}, expected ${CODE}\n${out}${err}")
endif()
if(NOT "${out}${err}" MATCHES "${MATCH}")
  message(FATAL_ERROR "expect_exit: the output of '${COMMAND}' does not match '${MATCH}':\n${out}${err}")
endif()
message(STATUS "expect_exit: exit ${code}: ${out}${err}")
