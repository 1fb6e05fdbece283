from robench.cli import main

main()
