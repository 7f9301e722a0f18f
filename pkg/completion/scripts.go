package completion

import (
	"fmt"
	"strings"
)

// The three scripts share one shape: a function that maps a command path
// to its subcommands, one that maps it to its flags, a list of the flags
// that take a value, and a walk over the words typed so far.

// writeShTables writes the functions the bash and the zsh script share:
// fn_subs and fn_flags (the tables) and fn_takes_value.
func writeShTables(b *strings.Builder, fn string, t tables) {
	writeCaseFunc(b, fn+"_subs", t, func(p string) string { return strings.Join(t.subs[p], " ") })
	writeCaseFunc(b, fn+"_flags", t, t.flagWords)
	fmt.Fprintf(b, `%[1]s_takes_value() {
    case "$1" in
        %[2]s) return 0 ;;
    esac
    return 1
}

`, fn, valuePattern(t))
}

func writeBash(b *strings.Builder, prog string, t tables) {
	fn := "_" + ident(prog)
	fmt.Fprintf(b, "# bash completion for %s; load with: source <(%s completion bash)\n", prog, prog)
	writeShTables(b, fn, t)
	fmt.Fprintf(b, `%[1]s() {
    local cur="${COMP_WORDS[COMP_CWORD]}" path="" i word next
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${COMP_WORDS[i]}"
        case "$word" in
            --) break ;;
            -*=*) ;;
            -*) if %[1]s_takes_value "$word"; then ((i++)); fi ;;
            *)
                next="${path:+$path }$word"
                if [[ " $(%[1]s_subs "$path") " == *" $word "* ]]; then path="$next"; fi
                ;;
        esac
    done
    if ((COMP_CWORD > 1)) && %[1]s_takes_value "${COMP_WORDS[COMP_CWORD-1]}"; then
        COMPREPLY=()
        return
    fi
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$(%[1]s_flags "$path")" -- "$cur"))
    else
        COMPREPLY=($(compgen -W "$(%[1]s_subs "$path")" -- "$cur"))
    fi
}

complete -o default -F %[1]s %[2]s
`, fn, prog)
}

func writeZsh(b *strings.Builder, prog string, t tables) {
	fn := "_" + ident(prog)
	fmt.Fprintf(b, "#compdef %s\n# zsh completion for %s; put it in a directory of $fpath as _%s, or: source <(%s completion zsh)\n", prog, prog, prog, prog)
	writeShTables(b, fn, t)
	fmt.Fprintf(b, `%[1]s() {
    local cur="${words[CURRENT]}" path="" i word
    local -a subs
    for ((i = 2; i < CURRENT; i++)); do
        word="${words[i]}"
        case "$word" in
            --) break ;;
            -*=*) ;;
            -*) if %[1]s_takes_value "$word"; then ((i++)); fi ;;
            *)
                subs=(${=$(%[1]s_subs "$path")})
                if ((${subs[(Ie)$word]})); then path="${path:+$path }$word"; fi
                ;;
        esac
    done
    if ((CURRENT > 2)) && %[1]s_takes_value "${words[CURRENT-1]}"; then
        _files
        return
    fi
    if [[ "$cur" == -* ]]; then
        compadd -- ${=$(%[1]s_flags "$path")}
    else
        compadd -- ${=$(%[1]s_subs "$path")}
    fi
}

if [[ "$funcstack[1]" == "%[1]s" ]]; then
    %[1]s "$@"
else
    compdef %[1]s %[2]s
fi
`, fn, prog)
}

func writeFish(b *strings.Builder, prog string, t tables) {
	fn := "__" + ident(prog)
	fmt.Fprintf(b, "# fish completion for %s; load with: %s completion fish | source\n", prog, prog)
	fmt.Fprintf(b, "function %s_subs\n    switch \"$argv[1]\"\n", fn)
	for _, p := range t.paths {
		if len(t.subs[p]) > 0 {
			fmt.Fprintf(b, "        case '%s'\n            echo %s\n", p, strings.Join(t.subs[p], " "))
		}
	}
	fmt.Fprintf(b, "    end\nend\n\n")
	fmt.Fprintf(b, `# %[1]s_path prints the command path of the words typed before the cursor.
function %[1]s_path
    set -l words (commandline -opc)
    set -l path ''
    set -l skip 0
    for word in $words[2..-1]
        if test $skip -eq 1
            set skip 0
            continue
        end
        switch $word
            case '--'
                break
            case '-*=*'
            case %[2]s
                set skip 1
            case '-*'
            case '*'
                if contains -- $word (string split ' ' (%[1]s_subs "$path"))
                    set path (string trim "$path $word")
                end
        end
    end
    echo $path
end

function %[1]s_at
    test (%[1]s_path) = "$argv[1]"
end

complete -c %[3]s -f
`, fn, strings.Join(quoteAll(t.valueWords), " "), prog)
	for _, p := range t.paths {
		cond := fmt.Sprintf("-n \"%s_at '%s'\"", fn, p)
		if subs := t.subs[p]; len(subs) > 0 {
			fmt.Fprintf(b, "complete -c %s %s -a '%s'\n", prog, cond, strings.Join(subs, " "))
		}
		for _, f := range t.flags[p] {
			opt := "-l " + f.Name
			if len(f.Name) == 1 {
				opt = "-s " + f.Name
			}
			if f.TakesValue {
				opt += " -r -F"
			}
			fmt.Fprintf(b, "complete -c %s %s %s\n", prog, cond, opt)
		}
	}
}

// writeCaseFunc writes a POSIX-style function that prints words(path) for
// each command path given as its first argument.
func writeCaseFunc(b *strings.Builder, name string, t tables, words func(string) string) {
	fmt.Fprintf(b, "\n%s() {\n    case \"$1\" in\n", name)
	for _, p := range t.paths {
		if ws := words(p); ws != "" {
			fmt.Fprintf(b, "        %q) echo %q ;;\n", p, ws)
		}
	}
	fmt.Fprintf(b, "    esac\n}\n\n")
}

// valuePattern is a case pattern matching every flag word that takes a
// value ("--endpoints|--lease|-w"), or a pattern that matches nothing.
func valuePattern(t tables) string {
	if len(t.valueWords) == 0 {
		return "''"
	}
	return strings.Join(t.valueWords, "|")
}

func quoteAll(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = "'" + w + "'"
	}
	return out
}
