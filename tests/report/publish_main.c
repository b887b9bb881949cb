/*
 * publish_main.c - `publish_main publish DIR --url URL ...` runs the CLI's
 * cmd_log_publish exactly as `coldstudy log publish` does, so report.sh
 * can test publishing through the real argument parsing before (and
 * independently of) the `log` verb's dispatch.
 */
#include "cmds.h"

int main(int argc, char **argv)
{
	return argc < 2 ? CS_EXIT_USAGE : cmd_log_publish(argc - 1, argv + 1);
}
