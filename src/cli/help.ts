import { Help, type Command, type Option } from 'commander';

/**
 * Commander enforces `requiredOption` but its help lists such options like any other: this marks them "(required)",
 * through commander's own help configuration, which every command created afterwards inherits.
 */
export function markRequiredOptions(program: Command): void {
  program.configureHelp({
    optionDescription(option: Option): string {
      const described = Help.prototype.optionDescription.call(this, option);
      return option.mandatory ? `${described} (required)` : described;
    },
  });
}
