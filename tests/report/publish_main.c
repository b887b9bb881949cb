/*
 * publish_main.c - the CLI's report verbs without the rest of the CLI:
 *   publish_main publish DIR --url URL ...   = coldstudy log publish ...
 *   publish_main report DIR --out R ...      = coldstudy report ...
 * so publish.sh can test publishing through the real argument parsing
 * before (and independently of) the `log` verb's dispatch, and the report
 * verbs can run under the sanitizers while another part is mid-edit.
 */
#include <string.h>

#include "cmds.h"

int main(int argc, char **argv)
{
	if (argc < 2)
		return CS_EXIT_USAGE;
	if (!strcmp(argv[1], "report"))
		return cmd_report(argc - 1, argv + 1);
	return cmd_log_publish(argc - 1, argv + 1);
}
